package ctlproto

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Dir returns the directory of the control sockets of uid's processes.
func Dir(uid int) string {
	return filepath.Join(os.TempDir(), "flightrec-"+strconv.Itoa(uid))
}

// SocketPath returns the control socket of process pid owned by uid.
func SocketPath(uid, pid int) string {
	return filepath.Join(Dir(uid), strconv.Itoa(pid)+".sock")
}

// OptIn tells how a program accepts control, for error messages.
const OptIn = `the program must opt in with one line in main: agent.Listen(agent.Options{}) (package github.com/flightrec/flightrec/agent)`

// ErrNoAgent is returned for a running process without a control socket.
var ErrNoAgent = errors.New("the process does not accept control")

// processOwner returns the uid owning process pid, or an error saying it
// does not exist.
func processOwner(pid int) (int, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("invalid pid %d", pid)
	}
	if ProcessGone(pid) {
		return 0, fmt.Errorf("no process with pid %d (it may have exited)", pid)
	}
	st, err := os.Stat("/proc/" + strconv.Itoa(pid))
	if err != nil {
		return os.Getuid(), nil // no procfs: assume our own
	}
	if uid, ok := FileOwner(st); ok {
		return uid, nil
	}
	return os.Getuid(), nil
}

// Dial connects to the control socket of process pid, with errors that
// say what is wrong: no such process, a process that has not opted in,
// or a socket of another user.
func Dial(pid int, timeout time.Duration) (net.Conn, error) {
	uid, err := processOwner(pid)
	if err != nil {
		return nil, err
	}
	path := SocketPath(uid, pid)
	conn, err := net.DialTimeout("unix", path, timeout)
	if err == nil {
		return conn, nil
	}
	switch {
	case errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM):
		return nil, fmt.Errorf("permission denied: process %d belongs to uid %d and only that user or root may control it (%s)", pid, uid, path)
	case errors.Is(err, syscall.ENOENT):
		return nil, fmt.Errorf("process %d: %w: no control socket %s; %s", pid, ErrNoAgent, path, OptIn)
	case errors.Is(err, syscall.ECONNREFUSED):
		return nil, fmt.Errorf("process %d: %w: its control socket %s is stale (the process has exited, or closed the agent); %s", pid, ErrNoAgent, path, OptIn)
	}
	return nil, fmt.Errorf("process %d: %w", pid, err)
}

// Call sends req to process pid and returns the response on the open
// connection (a stream goes on on it), or an error for a failed request.
func Call(pid int, req Request, timeout time.Duration) (*Response, net.Conn, error) {
	conn, err := Dial(pid, timeout)
	if err != nil {
		return nil, nil, err
	}
	req.Version = Version
	conn.SetDeadline(time.Now().Add(timeout))
	if err := WriteJSON(conn, req); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("process %d: sending the request: %w", pid, err)
	}
	var resp Response
	if err := ReadJSON(conn, MaxFrame, &resp); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("process %d: reading the response: %w", pid, err)
	}
	conn.SetDeadline(time.Time{})
	if resp.Error != "" {
		conn.Close()
		return nil, nil, fmt.Errorf("process %d: %s", pid, resp.Error)
	}
	return &resp, conn, nil
}

// Candidate is a control socket found on this machine.
type Candidate struct {
	PID  int
	Path string
}

// Candidates lists the control sockets this user can see: its own
// directory's, and every user's for root. Sockets of processes that are
// gone are left out.
func Candidates() []Candidate {
	dirs := []string{Dir(os.Getuid())}
	if os.Getuid() == 0 {
		all, _ := filepath.Glob(filepath.Join(os.TempDir(), "flightrec-*"))
		dirs = all
	}
	var out []Candidate
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			pid, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".sock"))
			if err != nil || !strings.HasSuffix(e.Name(), ".sock") {
				continue
			}
			if ProcessGone(pid) {
				continue
			}
			out = append(out, Candidate{PID: pid, Path: filepath.Join(d, e.Name())})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}
