//go:build linux

package probe

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Child is a program started stopped, so that probes are in place before
// it runs its first instruction.
type Child struct {
	PID    int
	cmd    *exec.Cmd
	resume chan chan error
}

// StartStopped starts argv under ptrace, which stops it at its first
// instruction after exec; Resume detaches and lets it run.
func StartStopped(argv []string, stdin io.Reader, stdout, stderr io.Writer) (*Child, error) {
	c := &Child{resume: make(chan chan error)}
	started := make(chan error)
	go func() {
		// ptrace requests must come from the thread that started the
		// tracee.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		var ws unix.WaitStatus
		if _, err := unix.Wait4(cmd.Process.Pid, &ws, 0, nil); err != nil || !ws.Stopped() {
			cmd.Process.Kill()
			started <- fmt.Errorf("starting %s: it did not stop after exec (%v)", argv[0], err)
			return
		}
		c.cmd, c.PID = cmd, cmd.Process.Pid
		started <- nil
		done := <-c.resume
		done <- unix.PtraceDetach(c.PID)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return c, nil
}

// Resume lets the program run.
func (c *Child) Resume() error {
	done := make(chan error)
	c.resume <- done
	if err := <-done; err != nil {
		return fmt.Errorf("resuming PID %d: %w", c.PID, err)
	}
	return nil
}

// Kill ends a program that was never resumed (or is running).
func (c *Child) Kill() {
	c.cmd.Process.Kill()
	go func() { c.resume <- make(chan error, 1) }()
	c.cmd.Wait()
}

// Wait waits for the program to exit; when ctx has ended (the probing was
// stopped), it first asks the program to stop with SIGTERM.
func (c *Child) Wait(ctx context.Context) error {
	if ctx.Err() != nil {
		c.cmd.Process.Signal(syscall.SIGTERM)
	}
	return c.cmd.Wait()
}
