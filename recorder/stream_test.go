package recorder

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightrec/flightrec/jfr"
)

// TestStreamOnEvents: a batch handler (OnEvents) gets the events an event
// handler gets, every one with its values and in the same order; so do
// event handlers of a type that has a batch handler too, each handler of
// the type in the order they were added.
func TestStreamOnEvents(t *testing.T) {
	st := NewStream(WithSettings(Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}))
	var mu sync.Mutex
	var got [3][]int64 // by handler
	var order []int
	take := func(h int, ev *jfr.Event) {
		n, _ := ev.Field("n")
		if s, _ := ev.Field("s"); s.String() != "x" {
			t.Errorf("handler %d, event %d: s = %q, want \"x\"", h, n.Int(), s.String())
		}
		mu.Lock()
		got[h] = append(got[h], n.Int())
		if len(order) == 0 || order[len(order)-1] != h {
			order = append(order, h)
		}
		mu.Unlock()
	}
	st.OnEvent("test.Counted", func(ev *jfr.Event) { take(0, ev) })
	st.OnEvents("test.Counted", func(b *jfr.EventBatch) {
		for ev := range b.Events() {
			take(1, ev)
		}
	})
	st.OnEvent("test.Counted", func(ev *jfr.Event) { take(2, ev) })
	st.OnError(func(err error) { t.Errorf("stream error: %v", err) })
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	emitCounted(n)
	waitHandled(t, n, func() int { mu.Lock(); defer mu.Unlock(); return len(got[2]) })
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// Every event once, to each handler in the same order: the order of
	// the records in the chunk, which is the emitting order within each
	// buffer, not across them (a goroutine that moves to another P, or in
	// purego builds to another shard, writes into another buffer).
	seen := make([]bool, n)
	for _, v := range got[0] {
		if v < 0 || v >= n || seen[v] {
			t.Fatalf("handler 0: event n = %d twice or out of range", v)
		}
		seen[v] = true
	}
	for h, ns := range got {
		if len(ns) != n {
			t.Fatalf("handler %d got %d events, want %d", h, len(ns), n)
		}
		for i, v := range ns {
			if v != got[0][i] {
				t.Fatalf("handler %d: event %d has n = %d, handler 0's has %d", h, i, v, got[0][i])
			}
		}
	}
	// Rows, each to every handler in turn.
	for i, h := range order {
		if h != i%3 {
			t.Fatalf("the handlers took rows in the order %v, want 0, 1, 2 for each row", order)
		}
	}
}

// TestStreamOnEvent: the handlers of a stream get every event emitted, with
// its values, within about a second; OnFlush follows each chunk; nothing
// comes after Close.
func TestStreamOnEvent(t *testing.T) {
	st := NewStream(WithSettings(Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}))
	var mu sync.Mutex
	got := map[int64]string{}
	var maxLatency time.Duration
	var flushes, after atomic.Int64
	var closed atomic.Bool
	st.OnEvent("test.Counted", func(ev *jfr.Event) {
		if closed.Load() {
			after.Add(1)
		}
		n, _ := ev.Field("n")
		s, _ := ev.Field("s")
		mu.Lock()
		got[n.Int()] = s.String()
		maxLatency = max(maxLatency, time.Since(ev.StartTime()))
		mu.Unlock()
	})
	st.OnFlush(func() { flushes.Add(1) })
	st.OnError(func(err error) { t.Errorf("stream error: %v", err) })
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	emitCounted(n)
	waitHandled(t, n, func() int { mu.Lock(); defer mu.Unlock(); return len(got) })
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	closed.Store(true)
	emitCounted(10, n)
	time.Sleep(1200 * time.Millisecond)
	for i := range int64(n) {
		if got[i] != "x" {
			t.Fatalf("event %d: s = %q, want \"x\"", i, got[i])
		}
	}
	if maxLatency > 2*time.Second {
		t.Errorf("an event reached its handler %v after it was emitted", maxLatency)
	}
	if flushes.Load() == 0 || after.Load() != 0 {
		t.Errorf("%d flushes, %d events after Close", flushes.Load(), after.Load())
	}
	if _, ok := Find(st.Recording().Name()); ok {
		t.Error("the stream's recording is still running after Close")
	}
}

// TestStreamBehind: handlers slower than the chunks get ErrStreamBehind,
// and the recorder goes on.
func TestStreamBehind(t *testing.T) {
	st := NewStream(WithMaxChunkAge(20*time.Millisecond), WithSettings(Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}))
	var behind atomic.Int64
	first := make(chan struct{})
	var once sync.Once
	st.OnFlush(func() {
		once.Do(func() {
			close(first)
			time.Sleep(time.Second) // meanwhile about 50 chunks come
		})
	})
	st.OnError(func(err error) {
		if errors.Is(err, ErrStreamBehind) {
			behind.Add(1)
		}
	})
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	<-first
	time.Sleep(1100 * time.Millisecond)
	emitCounted(10)
	time.Sleep(200 * time.Millisecond)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if behind.Load() == 0 {
		t.Error("no ErrStreamBehind after the handlers fell behind")
	}
}

// TestRepository: a ring recording with a repository keeps its chunks as
// files, deleting those beyond its limits; each file is a recording.
func TestRepository(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	rec, err := Start(WithRing(0, 300*time.Millisecond), WithRepository(dir), WithMaxChunkAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		emitCounted(10)
		time.Sleep(50 * time.Millisecond)
	}
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jfr"))
	// About 1 s of 50 ms chunks, of which the last 300 ms are kept.
	if len(files) < 3 || len(files) > 10 {
		t.Fatalf("%d chunk files in the repository, want about 7", len(files))
	}
	total := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		total += readEvents(t, data)["test.Counted"]
	}
	if total == 0 {
		t.Error("no test.Counted in the repository")
	}
}

// TestStreamAtFlushpoints: a stream gets each event once, at the
// flushpoints of chunks it does not cut: events emitted over 2.5 s reach
// the handler within about a second, all from one chunk (the recorder cut
// one a second for a stream before).
func TestStreamAtFlushpoints(t *testing.T) {
	st := NewStream(WithSettings(Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}))
	var mu sync.Mutex
	seen := map[int64]int{}
	chunks := map[int64]bool{}
	var maxLatency time.Duration
	st.OnEvent("test.Counted", func(ev *jfr.Event) {
		n, _ := ev.Field("n")
		mu.Lock()
		seen[n.Int()]++
		chunks[ev.Chunk.Header.StartNanos] = true
		maxLatency = max(maxLatency, time.Since(ev.StartTime()))
		mu.Unlock()
	})
	st.OnError(func(err error) { t.Errorf("stream error: %v", err) })
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	const batches, per = 5, 200
	for b := range batches {
		emitCounted(per, b*per)
		time.Sleep(500 * time.Millisecond)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		mu.Lock()
		k := len(seen)
		mu.Unlock()
		if k == batches*per || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	handledLive := len(seen)
	mu.Unlock()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if handledLive != batches*per {
		t.Errorf("%d of %d events handled before Close", handledLive, batches*per)
	}
	for i := range int64(batches * per) {
		if seen[i] != 1 {
			t.Fatalf("event %d handled %d times", i, seen[i])
		}
	}
	if len(chunks) != 1 {
		t.Errorf("events came from %d chunks; a stream cuts none", len(chunks))
	}
	if maxLatency > 2*time.Second {
		t.Errorf("an event reached its handler %v after it was emitted", maxLatency)
	}
}

// TestStreamOnChunk: OnChunk handlers get every chunk whole, a recording
// jfr reads, cut at least once a second.
func TestStreamOnChunk(t *testing.T) {
	st := NewStream(WithSettings(Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}))
	var mu sync.Mutex
	var chunks [][]byte
	st.OnChunk(func(b []byte) {
		mu.Lock()
		chunks = append(chunks, b)
		mu.Unlock()
	})
	events := 0
	st.OnEvent("test.Counted", func(*jfr.Event) { events++ })
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		emitCounted(100)
		time.Sleep(500 * time.Millisecond)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 2 {
		t.Fatalf("%d chunks in 2.5 s, want one a second", len(chunks))
	}
	total := 0
	for _, c := range chunks {
		total += readEvents(t, c)["test.Counted"]
	}
	if total != 500 || events != 500 {
		t.Errorf("%d test.Counted in the chunks, %d handled, want 500", total, events)
	}
}

// TestStreamLeavesOutUnhandled: the emitted records of a flush with none
// of a handled type are not copied for the stream, and the flushes around
// them are read as usual.
func TestStreamLeavesOutUnhandled(t *testing.T) {
	only := Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}, "bench.Event": {Enabled: Bool(true)}}
	st := NewStream(WithSettings(only))
	var handled atomic.Int64
	st.OnEvent("test.Counted", func(*jfr.Event) { handled.Add(1) })
	st.OnError(func(err error) { t.Errorf("stream error: %v", err) })
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	const bench = 200_000
	emitCounted(100)
	theSession.flushNow()
	emitLoop(benchType, bench) // about 4 MB, in flushes of their own
	theSession.flushNow()
	emitCounted(100, 100)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if handled.Load() != 200 {
		t.Errorf("handled %d test.Counted, want 200", handled.Load())
	}
	if c := st.copied.Load(); c > bench*4 {
		t.Errorf("%d bytes copied for the stream; the %d bench.Event records are not to be", c, bench)
	}
}

// TestStreamOnSegment: OnSegment handlers get each flush's metadata,
// checkpoints and the events of the types they keep, at their offsets,
// and none of the others; a reader rebuilding the chunks from the
// segments (as ctl stream's client does, with jfr.LiveChunk) decodes
// every kept event with its values.
func TestStreamOnSegment(t *testing.T) {
	only := Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}, "bench.Event": {Enabled: Bool(true)}}
	st := NewStream(WithSettings(only))
	live := jfr.NewLiveChunk(&jfr.ReaderOptions{PerChunkClock: true})
	var chunk uint64
	var buf []byte
	seen := map[int64]int{}
	others, segments := 0, 0
	var readErr error
	read := func(seg *Segment) error {
		if seg.Chunk != chunk {
			chunk, buf = seg.Chunk, buf[:0]
			live.Start(int(chunk-1), 0)
		}
		buf = append(buf, make([]byte, seg.Size-int64(len(buf)))...)
		for _, p := range seg.Parts {
			copy(buf[p.Offset:], p.Data)
		}
		c, err := live.Extend(seg.Header, buf)
		if err != nil {
			return err
		}
		if err := live.LoadConstants(); err != nil {
			return err
		}
		var ev jfr.Event
		for _, p := range seg.Parts {
			r := live.Reader(p.Offset, p.Offset+int64(len(p.Data)))
			for {
				rec, err := r.ReadRecord()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return err
				}
				if rec.TypeID < 2 {
					continue
				}
				if err := c.DecodeEvent(rec, &ev); err != nil {
					return err
				}
				if ev.Type.Name != "test.Counted" {
					others++
					continue
				}
				n, _ := ev.Field("n")
				s, _ := ev.Field("s")
				if s.String() != "x" {
					return fmt.Errorf("event %d: s = %q", n.Int(), s.String())
				}
				seen[n.Int()]++
			}
		}
		return nil
	}
	st.OnSegment(func(name string) bool { return name == "test.Counted" }, func(seg *Segment) {
		segments++
		if err := read(seg); err != nil && readErr == nil {
			readErr = err
		}
	})
	st.OnError(func(err error) { t.Errorf("stream error: %v", err) })
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	for b := range 3 {
		emitCounted(100, 100*b)
		emitLoop(benchType, 10_000)
		theSession.flushNow()
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if readErr != nil {
		t.Fatalf("reading the segments: %v", readErr)
	}
	for i := range int64(300) {
		if seen[i] != 1 {
			t.Fatalf("event %d read %d times from %d segments", i, seen[i], segments)
		}
	}
	if others != 0 {
		t.Errorf("%d events of types not kept in the segments", others)
	}
}

// TestStreamGrowsAroundHoles: a chunk buffer that grows past flushes whose
// records were left out (holes, not copied again) still has the bytes
// the stream reads: the events after each growth are handled with their
// values.
func TestStreamGrowsAroundHoles(t *testing.T) {
	only := Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}, "bench.Event": {Enabled: Bool(true)}}
	st := NewStream(WithSettings(only))
	st.lastChunks = [2]int{64 << 10, 64 << 10} // grown at each flush below
	got := map[int64]string{}
	st.OnEvent("test.Counted", func(ev *jfr.Event) {
		n, _ := ev.Field("n")
		s, _ := ev.Field("s")
		got[n.Int()] = s.String()
	})
	st.OnError(func(err error) { t.Errorf("stream error: %v", err) })
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	for b := range 4 {
		emitLoop(benchType, 20_000) // a flush left out
		theSession.flushNow()
		emitCounted(50, 50*b)
		theSession.flushNow()
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range int64(200) {
		if got[i] != "x" {
			t.Fatalf("event %d: s = %q, want \"x\" (%d handled)", i, got[i], len(got))
		}
	}
}

// TestStreamChunkBufferRoom: a chunk's buffer has room for a chunk like
// the last even when the spare one (a stream's last chunk, cut short) is
// smaller: growing it would copy the chunk so far on the chunk writer.
func TestStreamChunkBufferRoom(t *testing.T) {
	s := NewStream()
	s.spare = make(chan []byte, 1)
	s.spare <- make([]byte, 0, 64<<10)
	want := s.lastChunks[1] + s.lastChunks[1]/8
	if b := s.chunkBuffer(1 << 10); cap(b) < want {
		t.Errorf("a chunk buffer of %d bytes, want room for %d", cap(b), want)
	}
	big := make([]byte, 5, want)
	s.spare <- big
	if b := s.chunkBuffer(1 << 10); len(b) != 0 || &b[:1][0] != &big[0] {
		t.Error("a spare buffer with room was not reused")
	}
}

// TestStreamChunkBufferAfterShortChunk: a chunk cut short (as a
// recording's start or stop cuts one) does not shrink the buffer of the
// chunk after it, which would grow on the chunk writer, copying the chunk
// so far into a new array each time it doubles.
func TestStreamChunkBufferAfterShortChunk(t *testing.T) {
	s := NewStream()
	s.flushes = make(chan streamFlush, streamBacklog)
	s.spare = make(chan []byte, 2)
	short := make([]byte, 64<<10)
	s.deliver(segment{first: true, parts: [][]byte{short}, header: short[:jfr.HeaderSize], closed: true})
	s.deliver(segment{first: true, parts: [][]byte{short}, header: short[:jfr.HeaderSize]})
	if want := cutChunkSize(); cap(s.cur) < want {
		t.Errorf("after a chunk of %d bytes, a chunk buffer of %d bytes, want room for a chunk cut at the default size, %d", len(short), cap(s.cur), want)
	}
}

// TestStreamBuffersOutliveGC: the chunk buffers a stream is done with go
// to the next stream even after garbage collections (a sync.Pool, which
// held them before, is emptied by two), and are let go of idleBufferTime
// after the last was put.
func TestStreamBuffersOutliveGC(t *testing.T) {
	idleBuffers.drop() // those of the streams of other tests
	s := NewStream()
	s.spare = make(chan []byte, 2)
	b := s.chunkBuffer(1 << 10)
	s.spare <- b
	s.releaseSpares()
	runtime.GC()
	runtime.GC()
	next := NewStream()
	next.spare = make(chan []byte, 2)
	if got := next.chunkBuffer(1 << 10); &got[:1][0] != &b[:1][0] {
		t.Error("a stream's buffer did not go to the next stream across two garbage collections")
	}

	c := bufferCache{keep: time.Millisecond}
	c.put(make([]byte, 10))
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		n := len(c.bufs)
		c.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("a buffer still kept 10 s after it was put, to be kept 1 ms")
		}
	}
}

// TestBufferCacheKeepsLargest: of the buffers put, the cache keeps the two
// largest, and gets one with room for what is asked.
func TestBufferCacheKeepsLargest(t *testing.T) {
	c := bufferCache{keep: time.Hour}
	for _, n := range []int{10, 30, 20, 5} {
		c.put(make([]byte, n))
	}
	if b := c.get(25); cap(b) != 30 {
		t.Errorf("get(25) gave %d bytes, want the 30 kept", cap(b))
	}
	if b := c.get(25); b != nil {
		t.Errorf("get(25) gave %d bytes, want none left with room", cap(b))
	}
	if b := c.get(1); cap(b) != 20 {
		t.Errorf("get(1) gave %d bytes, want the 20 kept", cap(b))
	}
}

// waitHandled waits until count, the events a stream's handlers took,
// reaches n, for at most 3 s (a flush comes every second).
func waitHandled(t *testing.T, n int, count func() int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		k := count()
		if k == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("handled %d of %d events within 3 s", k, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
