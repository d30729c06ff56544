package gotrace

import (
	"bytes"
	"runtime"
	rtrace "runtime/trace"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/exp/trace"
)

func monoNow(t *testing.T) int64 {
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		t.Error(errno)
	}
	return ts.Nano()
}

func goid() trace.GoID {
	var buf [64]byte
	s := strings.TrimPrefix(string(buf[:runtime.Stack(buf[:], false)]), "goroutine ")
	id, _ := strconv.Atoi(s[:strings.IndexByte(s, ' ')])
	return trace.GoID(id)
}

// spinner is a goroutine that ran on one OS thread: what it saw of itself.
type spinner struct {
	g     trace.GoID
	tid   int
	monos []int64 // CLOCK_MONOTONIC readings while it ran
}

// TestThreadTimeline traces goroutines locked to their OS threads that
// spin: the timeline puts each on the thread gettid named, at the
// CLOCK_MONOTONIC times it read while spinning, and never two goroutines
// on a thread at once.
func TestThreadTimeline(t *testing.T) {
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Skip("the test binary traces already:", err)
	}
	spinners := make([]spinner, 2)
	var wg sync.WaitGroup
	for i := range spinners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			s := &spinners[i]
			s.g, s.tid = goid(), syscall.Gettid()
			for end := time.Now().Add(150 * time.Millisecond); time.Now().Before(end); {
				s.monos = append(s.monos, monoNow(t))
				for range 20000 {
					runtime.KeepAlive(s)
				}
			}
		}()
	}
	wg.Wait()
	rtrace.Stop()

	var runs []Running
	gens, pieces := 0, 0
	var start int64
	c := NewConverter(Options{Timeline: func(tl *ThreadTimeline) {
		pieces++
		if len(tl.Running) > TimelinePiece {
			t.Errorf("a piece of %d runs, more than %d", len(tl.Running), TimelinePiece)
		}
		if tl.Start == 0 || start != 0 && tl.Start != start || tl.End != 0 && tl.End < tl.Start {
			t.Errorf("a piece of generation %d covers [%d, %d], the generation began at %d", gens+1, tl.Start, tl.End, start)
		}
		start = tl.Start
		for _, r := range tl.Running {
			// A run may go on from the previous generation's last event
			// of its thread.
			if tl.End != 0 && r.End > tl.End || r.End <= r.Start {
				t.Errorf("%+v outside its generation [%d, %d]", r, tl.Start, tl.End)
			}
		}
		runs = append(runs, tl.Running...)
		if tl.End != 0 {
			gens++
			start = 0
		}
	}})
	err := c.Convert(bytes.NewReader(buf.Bytes()), func(g *Generation) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if gens == 0 {
		t.Fatalf("%d generations in %d pieces", gens, pieces)
	}
	byThread := map[trace.ThreadID][]Running{}
	for _, r := range runs {
		if r.G == trace.NoGoroutine {
			continue // not known: the reader re-dated the events that would say
		}
		for _, o := range byThread[r.Thread] {
			if r.Start < o.End && o.Start < r.End {
				t.Fatalf("two goroutines on thread %d at once: %+v, %+v", r.Thread, o, r)
			}
		}
		byThread[r.Thread] = append(byThread[r.Thread], r)
	}
	for _, s := range spinners {
		if len(s.monos) == 0 {
			t.Fatalf("goroutine %d did not spin", s.g)
		}
		found := 0
		for _, m := range s.monos {
			for _, r := range byThread[trace.ThreadID(s.tid)] {
				if r.Start <= m && m <= r.End {
					if r.G != s.g {
						t.Fatalf("at %d thread %d ran goroutine %d, not %d", m, s.tid, r.G, s.g)
					}
					found++
				}
			}
		}
		// The tracer may have stopped the goroutine for a moment
		// between a reading and its interval's end: nearly all, not all.
		if found < len(s.monos)*9/10 {
			t.Errorf("goroutine %d on thread %d: %d of its %d times in the timeline", s.g, s.tid, found, len(s.monos))
		}
	}
}
