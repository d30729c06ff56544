package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flightrec/flightrec/internal/ctlproto"
)

// Options configures the agent. The zero value serves the socket only.
type Options struct {
	// DumpOnExit writes every in-memory recording running at exit (at
	// Close, or on SIGTERM/SIGINT) to a file: its filename, or
	// flightrec-<pid>-<id>-<name>.jfr in the working directory.
	DumpOnExit bool
	// ShutdownCleanup removes the socket and stops the agent's recordings
	// on SIGTERM and SIGINT, then ends the process as the signal would.
	// DumpOnExit, or a recording started with dumponexit=true, implies it.
	ShutdownCleanup bool
}

// Limits on clients: a request must arrive within requestTimeout; at most
// maxConns connections (maxStreams of them streams) are served at once,
// more are closed at once.
const (
	requestTimeout = 2 * time.Second
	writeTimeout   = 10 * time.Second
	maxConns       = 16
	maxStreams     = 4
)

type agent struct {
	opts Options
	ln   *net.UnixListener
	path string
	sem  chan struct{}

	mu      sync.Mutex
	managed map[int64]*managed
	streams int
	nextRec int
	closed  bool
	quit    chan struct{}
	conns   sync.WaitGroup
	sigs    chan os.Signal
}

var (
	current   *agent
	currentMu sync.Mutex
)

// Listen opens the control socket, serves it on a goroutine, and starts
// the recording FLIGHTREC_START describes, if set. It fails if the agent
// already listens.
func Listen(opts Options) error {
	currentMu.Lock()
	defer currentMu.Unlock()
	if current != nil {
		return errors.New("agent: already listening")
	}
	a := &agent{opts: opts, sem: make(chan struct{}, maxConns), managed: map[int64]*managed{}, quit: make(chan struct{})}
	if err := a.listen(); err != nil {
		return err
	}
	current = a
	if spec := os.Getenv("FLIGHTREC_START"); spec != "" {
		s, err := parseStartSpec(spec)
		if err == nil {
			_, err = a.start(s)
		}
		if err != nil {
			a.close()
			current = nil
			return fmt.Errorf("agent: FLIGHTREC_START: %w", err)
		}
	}
	if opts.ShutdownCleanup || opts.DumpOnExit || a.anyDumpOnExit() {
		a.handleSignals()
	}
	go a.serve()
	return nil
}

// Close stops serving, writes the recordings to dump on exit, stops the
// recordings the agent started and removes the socket. Call it (deferred
// in main) for a normal exit.
func Close() {
	currentMu.Lock()
	a := current
	current = nil
	currentMu.Unlock()
	if a != nil {
		a.close()
	}
}

func (a *agent) listen() error {
	uid := os.Geteuid()
	dir := ctlproto.Dir(uid)
	if err := secureDir(dir, uid); err != nil {
		return err
	}
	removeStale(dir)
	a.path = ctlproto.SocketPath(uid, os.Getpid())
	os.Remove(a.path) // a socket left by an earlier process with our pid
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: a.path, Net: "unix"})
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if err := os.Chmod(a.path, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("agent: %w", err)
	}
	a.ln = ln
	return nil
}

// secureDir makes dir a directory of uid's, mode 0700, refusing one that
// is a symbolic link or belongs to someone else.
func secureDir(dir string, uid int) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return fmt.Errorf("agent: %w", err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("agent: %s is not a directory", dir)
	}
	if owner, ok := ctlproto.FileOwner(st); ok && owner != uid {
		return fmt.Errorf("agent: %s belongs to uid %d, not %d", dir, owner, uid)
	}
	if st.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
	}
	return nil
}

// removeStale removes the sockets of processes that are gone (killed
// before they could remove their own).
func removeStale(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		pid, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".sock"))
		if err == nil && strings.HasSuffix(e.Name(), ".sock") && ctlproto.ProcessGone(pid) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

func (a *agent) close() {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.closed = true
	close(a.quit)
	a.mu.Unlock()
	a.ln.Close() // removes the socket file
	a.conns.Wait()
	a.stopAll()
	if a.sigs != nil {
		signal.Stop(a.sigs)
	}
}

// handleSignals cleans up on SIGTERM and SIGINT, then lets the signal end
// the process.
func (a *agent) handleSignals() {
	a.sigs = make(chan os.Signal, 1)
	signal.Notify(a.sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		sig, ok := <-a.sigs
		if !ok {
			return
		}
		Close()
		signal.Reset(sig)
		if p, err := os.FindProcess(os.Getpid()); err == nil && p.Signal(sig) == nil {
			return
		}
		os.Exit(1) // the signal cannot be raised again here (Windows)
	}()
}

func (a *agent) serve() {
	for {
		conn, err := a.ln.AcceptUnix()
		if err != nil {
			select {
			case <-a.quit:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// EMFILE and the like: wait rather than spin.
			time.Sleep(50 * time.Millisecond)
			continue
		}
		select {
		case a.sem <- struct{}{}:
		default:
			conn.Close() // flooded: serve those already in
			continue
		}
		a.conns.Add(1)
		go func() {
			defer a.conns.Done()
			defer func() { <-a.sem }()
			defer conn.Close()
			a.handle(conn)
		}()
	}
}

// handle serves one connection: one request, its response.
func (a *agent) handle(conn *net.UnixConn) {
	defer func() {
		// A bug in serving one request must not end the service.
		if p := recover(); p != nil {
			reply(conn, &ctlproto.Response{Error: fmt.Sprintf("internal error: %v", p)})
		}
	}()
	if err := checkPeer(conn); err != nil {
		reply(conn, &ctlproto.Response{Error: err.Error()})
		return
	}
	conn.SetReadDeadline(time.Now().Add(requestTimeout))
	kind, body, err := ctlproto.ReadFrame(conn, ctlproto.MaxRequest)
	if err != nil {
		var fe *ctlproto.FrameError
		if errors.As(err, &fe) || errors.Is(err, ctlproto.ErrFrameTooLarge) {
			reply(conn, &ctlproto.Response{Error: "bad request: " + err.Error()})
		}
		return
	}
	var req ctlproto.Request
	if kind != ctlproto.KindJSON {
		reply(conn, &ctlproto.Response{Error: "bad request: not a JSON frame"})
		return
	}
	if err := json.Unmarshal(body, &req); err != nil {
		reply(conn, &ctlproto.Response{Error: "bad request: " + err.Error()})
		return
	}
	if req.Version != ctlproto.Version {
		reply(conn, &ctlproto.Response{Error: fmt.Sprintf("protocol version %d not supported (this agent speaks %d); use a flightrec of the same release", req.Version, ctlproto.Version)})
		return
	}
	conn.SetReadDeadline(time.Time{})
	if req.Command == ctlproto.CmdStream {
		a.stream(conn, &req)
		return
	}
	resp, err := a.do(&req)
	if err != nil {
		resp = &ctlproto.Response{Error: err.Error()}
	}
	reply(conn, resp)
}

func reply(conn net.Conn, resp *ctlproto.Response) {
	resp.Version = ctlproto.Version
	conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	ctlproto.WriteJSON(conn, resp)
}

func (a *agent) do(req *ctlproto.Request) (*ctlproto.Response, error) {
	switch req.Command {
	case ctlproto.CmdInfo:
		return &ctlproto.Response{Process: processInfo()}, nil
	case ctlproto.CmdStart:
		s, err := startSpecOf(req)
		if err != nil {
			return nil, err
		}
		info, err := a.start(s)
		if err != nil {
			return nil, err
		}
		return &ctlproto.Response{Recordings: []ctlproto.RecordingInfo{info}}, nil
	case ctlproto.CmdCheck:
		return a.check(req.Name)
	case ctlproto.CmdConfigure:
		return a.configure(req)
	case ctlproto.CmdDump:
		return a.dump(req)
	case ctlproto.CmdStop:
		return a.stop(req)
	}
	return nil, fmt.Errorf("unknown command %q", req.Command)
}

func processInfo() *ctlproto.Process {
	prog, err := os.Executable()
	if err != nil {
		prog = os.Args[0]
	}
	return &ctlproto.Process{PID: os.Getpid(), Program: filepath.Base(prog), GoVersion: runtime.Version(), Recordings: recordingCount()}
}
