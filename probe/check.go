//go:build linux

package probe

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ErrPrivilege is wrapped by errors about missing privileges.
var ErrPrivilege = errors.New("eBPF uprobes need root or CAP_BPF+CAP_PERFMON")

// ErrNoUprobes is wrapped when the kernel has no uprobe support.
var ErrNoUprobes = errors.New("the kernel has no uprobe support (no uprobe PMU in /sys/bus/event_source/devices)")

const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

// CheckPrivileges tells whether this process may load BPF programs and
// place uprobes, naming what is missing.
func CheckPrivileges() error {
	eff, err := effectiveCaps()
	if err != nil {
		return err
	}
	has := func(c uint) bool { return eff&(1<<c) != 0 }
	if has(capSysAdmin) || (has(capBPF) && has(capPerfmon)) {
		return nil
	}
	var missing []string
	if !has(capBPF) {
		missing = append(missing, "CAP_BPF")
	}
	if !has(capPerfmon) {
		missing = append(missing, "CAP_PERFMON")
	}
	return fmt.Errorf("%w: missing %s", ErrPrivilege, strings.Join(missing, " and "))
}

func effectiveCaps() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, errors.New("no CapEff in /proc/self/status")
}

// CheckUprobes tells whether the kernel can place uprobes.
func CheckUprobes() error {
	if _, err := os.Stat("/sys/bus/event_source/devices/uprobe"); err != nil {
		return ErrNoUprobes
	}
	return nil
}

// ErrNoProcess is wrapped when the PID names no running process.
var ErrNoProcess = errors.New("no such process")

// Executable returns the path through which the executable of pid can be
// opened even when it was deleted or replaced on disk, or lives in another
// mount namespace.
func Executable(pid int) (string, error) {
	if pid <= 0 {
		return "", fmt.Errorf("PID %d: %w", pid, ErrNoProcess)
	}
	p := fmt.Sprintf("/proc/%d/exe", pid)
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		return "", fmt.Errorf("PID %d: %w", pid, ErrNoProcess)
	}
	if _, err := os.Readlink(p); err != nil {
		return "", fmt.Errorf("PID %d: cannot read its executable: %w", pid, err)
	}
	return p, nil
}
