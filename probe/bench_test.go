//go:build linux

package probe

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkProbeCost measures the cost per hit of probes on main.handle, a
// function of a few ns called in a tight loop by the target, which times
// its own loop: unprobed, with an entry-only probe (per-goroutine count),
// with a call probe (entry and every RET: count, pairing, duration sent to
// the ring buffer), and with bpftrace counting per thread at the same
// function (its uprobe goes on the first instruction). ns/call is the
// target's loop time over its calls; cpu-ns/call counts only the CPU time
// of the loop's thread (user and kernel, where uprobes run), which other
// processes on a busy machine do not inflate.
func BenchmarkProbeCost(b *testing.B) {
	bin := buildTarget(b, "")
	b.Run("unprobed", func(b *testing.B) { benchTarget(b, bin, nil) })
	b.Run("entry", func(b *testing.B) {
		needProbesB(b)
		benchTarget(b, bin, func(pid int) func() { return attachB(b, pid, "main.handle:entry") })
	})
	b.Run("call", func(b *testing.B) {
		needProbesB(b)
		benchTarget(b, bin, func(pid int) func() { return attachB(b, pid, "main.handle") })
	})
	b.Run("bpftrace-entry", func(b *testing.B) {
		needProbesB(b)
		bt, err := exec.LookPath("bpftrace")
		if err != nil {
			b.Skip("bpftrace not installed (apt-get install bpftrace)")
		}
		benchTarget(b, bin, func(pid int) func() { return bpftrace(b, bt, bin) })
	})
}

func needProbesB(b *testing.B) {
	if err := CheckPrivileges(); err != nil {
		b.Skipf("skipping: %v", err)
	}
	if err := CheckUprobes(); err != nil {
		b.Skipf("skipping: %v", err)
	}
}

// benchTarget runs the target's bench loop of b.N calls with probes placed
// by attach (which returns how to detach) and reports ns per call.
func benchTarget(b *testing.B, bin string, attach func(pid int) func()) {
	cmd := exec.Command(bin, "bench", fmt.Sprint(b.N))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "ready" {
		b.Fatal("target did not start")
	}
	if attach != nil {
		detach := attach(cmd.Process.Pid)
		defer detach()
	}
	fmt.Fprintln(stdin)
	if !sc.Scan() {
		b.Fatal("target printed nothing")
	}
	var ns, cpu, sum int64
	if _, err := fmt.Sscanf(sc.Text(), "ns %d cpu %d sum %d", &ns, &cpu, &sum); err != nil {
		b.Fatalf("target printed %q", sc.Text())
	}
	b.ReportMetric(float64(ns)/float64(b.N), "ns/call")
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/call")
}

func attachB(b *testing.B, pid int, fn string) func() {
	s, err := Attach(pid, Options{Funcs: []string{fn}})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, nil) }()
	return func() {
		cancel()
		<-done
		sums, _ := s.Summaries()
		s.Close()
		if len(sums) == 1 && sums[0].Calls != uint64(b.N) {
			b.Errorf("probe counted %d calls of %d", sums[0].Calls, b.N)
		}
	}
}

// bpftrace starts bpftrace counting main.handle per thread and waits until
// it has attached.
func bpftrace(b *testing.B, bt, bin string) func() {
	cmd := exec.Command(bt, "-e", fmt.Sprintf("uprobe:%s:main.handle { @[tid] = count(); }", bin))
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	ready := make(chan bool, 1)
	go func() {
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "Attaching") {
				ready <- true
				break
			}
		}
		for sc.Scan() {
		}
	}()
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		b.Fatal("bpftrace did not attach")
	}
	time.Sleep(200 * time.Millisecond) // "Attaching" is printed just before the probes are placed
	return func() {
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
	}
}
