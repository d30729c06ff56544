//go:build linux

package probe

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// bpfStats turns on the kernel's BPF run-time statistics during the
// benchmark, which then reports bpf-ns/call: the time the probes'
// programs ran per call. Off by default: keeping them costs each program
// run two clock reads.
var bpfStats = flag.Bool("bpfstats", false, "report the BPF programs' own run time (kernel.bpf_stats_enabled)")

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
	if *bpfStats {
		stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
		if err != nil {
			b.Fatalf("enabling BPF statistics: %v", err)
		}
		defer stats.Close()
	}
	b.Run("unprobed", func(b *testing.B) { benchTarget(b, bin, nil) })
	noop := func(b *testing.B, fn string) {
		needProbesB(b)
		noopPrograms = true
		defer func() { noopPrograms = false }()
		benchTarget(b, bin, func(pid int) func() { return attachB(b, pid, fn) })
	}
	b.Run("noop-entry", func(b *testing.B) { noop(b, "main.handle:entry") })
	b.Run("noop-call", func(b *testing.B) { noop(b, "main.handle") })
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
		if *bpfStats { // before Run's end closes the programs
			var run time.Duration
			for _, p := range s.progs {
				st, err := p.Stats()
				if err != nil {
					b.Fatalf("reading BPF statistics: %v", err)
				}
				run += st.Runtime
			}
			b.ReportMetric(float64(run.Nanoseconds())/float64(b.N), "bpf-ns/call")
		}
		cancel()
		<-done
		sums, _ := s.Summaries()
		s.Close()
		if !noopPrograms && len(sums) == 1 && sums[0].Calls != uint64(b.N) {
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
		// A SIGINT that lands before bpftrace waits for events (it
		// attaches slowly on a busy machine) is noted but not acted on
		// until a signal interrupts the wait: repeat it, then kill.
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		for i := 0; ; i++ {
			cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-exited:
				return
			case <-time.After(2 * time.Second):
			}
			if i == 15 {
				cmd.Process.Kill()
				<-exited
				return
			}
		}
	}
}
