package recorder

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/jfr"
)

// stallingFile blocks its writes, once stall is set, until release is
// closed; waiting is closed when the first write blocks.
type stallingFile struct {
	*os.File
	stall   atomic.Bool
	once    sync.Once
	waiting chan struct{}
	release chan struct{}
}

func (f *stallingFile) WriteAt(b []byte, off int64) (int, error) {
	if f.stall.Load() {
		f.once.Do(func() { close(f.waiting) })
		<-f.release
	}
	return f.File.WriteAt(b, off)
}

// TestSlowWriteLeavesBuffersFree: while the chunk writer is stuck in a
// flush (a write that does not return, as a flush delayed behind the run
// queues of 10,000 goroutines, a slow disk), the flusher goes on taking
// the full buffers, copies their records out and frees them, so that a
// pool and a quarter's worth of events emitted meanwhile are all recorded.
// Before, the buffers waited in the flusher's hands for the writer, and
// the pool ran out after about two thirds of one (53% of the events
// dropped).
func TestSlowWriteLeavesBuffersFree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slow.jfr")
	sf := &stallingFile{waiting: make(chan struct{}), release: make(chan struct{})}
	createFile = func(path string) (sinkFile, error) {
		f, err := os.Create(path)
		sf.File = f
		return sf, err
	}
	defer func() { createFile = func(path string) (sinkFile, error) { return os.Create(path) } }()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	only := Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}
	rec, err := Start(WithFile(path), WithSettings(only))
	if err != nil {
		t.Fatal(err)
	}
	released := false
	defer func() {
		if !released {
			close(sf.release)
			rec.Stop()
		}
	}()
	sf.stall.Store(true)
	const round = 1000
	emitted := 0
	for stuck := false; !stuck; {
		if emitted > 100_000_000 {
			t.Fatal("the chunk writer never wrote")
		}
		emitCounted(round, emitted)
		emitted += round
		select {
		case <-sf.waiting:
			stuck = true
		default:
		}
	}
	s := theSession.s
	dropped := s.DroppedEvents.Load()
	// A pool and a quarter of events of about 17 bytes.
	more := 5 * s.Buffers() * batch.BufferSize / 4 / 17
	emitCounted(more, emitted)
	emitted += more
	if n := s.DroppedEvents.Load() - dropped; n > 0 {
		t.Errorf("%d of %d events dropped while the chunk writer was stuck", n, more)
	}
	close(sf.release)
	released = true
	n := stopAndCount(t, rec, path)
	if want := emitted - int(s.DroppedEvents.Load()); n != want {
		t.Errorf("%d events in the file, want %d", n, want)
	}
}

// TestLateFlusherGrowsPool: a flusher kept waiting to run (as behind the
// run queues of 10,000 goroutines woken by their timers every millisecond,
// 100-280 ms) comes back to find the buffers nearly all full; it grows
// the pool, so that the next, longer wait, during which the program fills
// a pool and a quarter, drops nothing. Before, the pool kept its size and
// 10,000 paced goroutines dropped up to 0.3% of their events in some runs
// of BenchmarkManyGoroutines.
func TestLateFlusherGrowsPool(t *testing.T) {
	path := filepath.Join(t.TempDir(), "late.jfr")
	var hold atomic.Bool
	held := make(chan struct{}, 1)
	release := make(chan struct{})
	wokenHook = func() {
		if hold.Load() {
			held <- struct{}{}
			<-release
		}
	}
	only := Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}
	rec, err := Start(WithFile(path), WithSettings(only))
	if err != nil {
		wokenHook = nil
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			hold.Store(false)
			close(release)
			rec.Stop()
		}
		wokenHook = nil
	}()
	s := theSession.s
	base := s.Buffers()
	emitted := 0
	// late keeps the flusher from running, from its next wake-up until
	// fill reports that enough was emitted, and then lets it catch up.
	// fill is given the events emitted since late began: from then until
	// the flusher is held it stays parked, so those wait in buffers too
	// (on a loaded machine the flusher can take a while to wake and be
	// held, and counting only from then asked the pool for more).
	late := func(fill func(since int) bool) {
		t.Helper()
		start := emitted
		hold.Store(true)
		for waited := false; !waited; {
			emitCounted(1000, emitted)
			emitted += 1000
			select {
			case <-held:
				waited = true
			default:
			}
			if emitted > 100_000_000 {
				t.Fatal("the flusher was never woken")
			}
		}
		for !fill(emitted - start) {
			emitCounted(1000, emitted)
			emitted += 1000
		}
		hold.Store(false)
		release <- struct{}{}
		// Caught up: a flush to the file frees every buffer but the
		// Ps' own.
		theSession.flushNow()
	}
	// Until three quarters of the pool are full: nothing dropped, but
	// the flusher finds fewer than a quarter free.
	perBuffer, full0, since0 := 0, -1, 0
	late(func(since int) bool {
		full := len(s.Full)
		if full0 < 0 {
			full0, since0 = full, since
		}
		if full >= 3*base/4+2 {
			perBuffer = (since - since0) / (full - full0)
			return true
		}
		return false
	})
	if n := s.DroppedEvents.Load(); n > 0 {
		t.Fatalf("%d events dropped in a wait that fills three quarters of the pool", n)
	}
	if s.Buffers() <= base {
		t.Fatalf("the pool kept its %d buffers after the flusher found it nearly full", base)
	}
	more := 5 * base * perBuffer / 4
	late(func(since int) bool { return since >= more })
	if n := s.DroppedEvents.Load(); n > 0 {
		t.Errorf("%d of %d events dropped in a wait that fills a pool and a quarter (pool grew from %d to %d buffers)",
			n, more, base, s.Buffers())
	}
	stopped = true
	close(release)
	if n := stopAndCount(t, rec, path); n != emitted {
		t.Errorf("the file holds %d of the %d events", n, emitted)
	}
}

// stopAndCount stops rec and returns how many test.Counted events its
// file, path, holds.
func stopAndCount(t *testing.T, rec *Recording, path string) int {
	t.Helper()
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	eachEvent(t, data, func(ev *jfr.Event) {
		if ev.Type.Name == "test.Counted" {
			n++
		}
	})
	return n
}
