package recorder

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCPUSamplerThreads checks that the sampler samples a thread started
// after it, and closes the counter of a thread that exited: a program
// whose threads come and go must not leak descriptors or mappings.
func TestCPUSamplerThreads(t *testing.T) {
	s, err := newCPUSampler(5 * time.Millisecond)
	if err != nil {
		if strings.Contains(err.Error(), "perf_event_open") {
			t.Skipf("no perf events here: %v", err)
		}
		t.Fatal(err)
	}
	defer s.close()
	tids := make(chan int)
	exit := make(chan struct{})
	spun := make(chan int, 1)
	release := make(chan struct{})
	defer close(release)
	var tid int
	for tid == 0 {
		go func() {
			// A locked goroutine that exits takes its thread with it,
			// unless that is the main thread, which the runtime keeps:
			// then hold it and try again.
			runtime.LockOSThread()
			if syscall.Gettid() == syscall.Getpid() {
				tids <- 0
				<-release
				runtime.UnlockOSThread()
				return
			}
			tids <- syscall.Gettid()
			<-exit
			spun <- spin(200 * time.Millisecond)
		}()
		tid = <-tids
	}
	time.Sleep(scanEvery)
	var samples []cpuSample
	samples = s.read(samples)
	if s.threads[tid] == nil {
		t.Fatalf("thread %d, started after the sampler, is not sampled", tid)
	}
	close(exit)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		samples = s.read(samples)
		if s.threads[tid] == nil {
			break
		}
	}
	if s.threads[tid] != nil {
		t.Errorf("thread %d exited but its counter is still open", tid)
	}
	spinSink += <-spun
	inSpin := 0
	for _, sm := range samples {
		for _, pc := range sm.pcs {
			if f := runtime.FuncForPC(pc - 1); f != nil && strings.HasSuffix(f.Name(), ".spin") {
				inSpin++
				break
			}
		}
	}
	if inSpin == 0 {
		t.Errorf("no sample of the exiting thread's spin among %d", len(samples))
	}
	t.Logf("%d samples, %d in spin, %s", len(samples), inSpin, s.describe())
}

// TestCPUSamplerSaysUnsampled checks that threads the sampler cannot open
// a counter for (here: out of descriptors) are counted in what
// jdk.ActiveSetting says of it, not left out silently.
func TestCPUSamplerSaysUnsampled(t *testing.T) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skip(err)
	}
	// Room for the scan's directory, then one counter.
	low := lim
	low.Cur = uint64(len(fds)) + 1
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skip(err)
	}
	s, err := newCPUSampler(10 * time.Millisecond)
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	if err != nil {
		if strings.Contains(err.Error(), "perf_event_open") {
			t.Skipf("no perf events here: %v", err)
		}
		t.Fatal(err)
	}
	defer s.close()
	if d := s.describe(); s.unsampled == 0 || !strings.Contains(d, "threads not sampled") {
		t.Errorf("%d threads sampled, %d not; the sampler says %q", len(s.threads), s.unsampled, d)
	}
}
