package recorder

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/jfr"
)

// TestStartStopCycles starts and stops recordings with chunks cut every
// millisecond, so the flusher cuts chunks while Stop tears the session
// down: under -race this found the flusher reading the session's runtime
// events without its lock.
func TestStartStopCycles(t *testing.T) {
	for i := range 200 {
		rec, err := Start(WithRing(1<<20, 0), WithMaxChunkAge(time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		emitCounted(10, i)
		if i%4 == 0 {
			time.Sleep(time.Millisecond)
		}
		if err := rec.Stop(); err != nil {
			t.Fatal(err)
		}
	}
}

// chunkLayout is what walking a file's records finds, chunk by chunk.
type chunkLayout struct {
	size, cpOffset int64
	state          byte
	checkpoints    int // records of type 1
	flushes        int // checkpoints with the flush bit
	poolBytes      int64
	flushEnds      []int64 // ticks at which each checkpoint ends
}

// layout walks the chunks of data by their headers and records.
func layout(t testing.TB, data []byte) []chunkLayout {
	t.Helper()
	var out []chunkLayout
	for off := int64(0); off < int64(len(data)); {
		if int64(len(data))-off < jfr.HeaderSize || string(data[off:off+4]) != "FLR\x00" {
			t.Fatalf("no chunk header at %d", off)
		}
		h := data[off:]
		c := chunkLayout{size: int64(binary.BigEndian.Uint64(h[8:])), cpOffset: int64(binary.BigEndian.Uint64(h[16:])), state: h[64]}
		if c.size < jfr.HeaderSize || off+c.size > int64(len(data)) {
			t.Fatalf("chunk at %d: size %d, file %d", off, c.size, len(data))
		}
		for p := int64(jfr.HeaderSize); p < c.size; {
			size, n := leb128.Uvarint(h[p:c.size])
			if n == 0 || size == 0 || p+int64(size) > c.size {
				t.Fatalf("chunk at %d: bad record at %d", off, p)
			}
			typ, m := leb128.Uvarint(h[p+int64(n) : p+int64(size)])
			// Not an empty one: after a streamed chunk's header, or the
			// file sink's pad before a chunk (all zeros).
			if typ == 1 && size > 2 && slices.ContainsFunc(h[p+int64(n+m):p+int64(size)], func(b byte) bool { return b != 0 }) {
				c.checkpoints++
				c.poolBytes += int64(size)
				q := p + int64(n+m)
				var f [3]uint64 // start, duration, delta
				for i := range f {
					v, k := leb128.Uvarint(h[q:])
					f[i] = v
					q += int64(k)
				}
				c.flushEnds = append(c.flushEnds, int64(f[0]+f[1]))
				if h[q]&jfr.CheckpointFlush != 0 {
					c.flushes++
				}
			}
			p += int64(size)
		}
		out = append(out, c)
		off += c.size
	}
	return out
}

// TestFlushpoints records with flushpoints requested while events are
// emitted: the file, read while recording, holds every event emitted before
// each flushpoint, in one chunk that grows by a flush checkpoint each time;
// after Stop our reader and jfr summary count every event.
func TestFlushpoints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "flush.jfr")
	only := Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}, "jdk.DataLoss": {Enabled: Bool(true)}}
	rec, err := Start(WithFile(path), WithSettings(only))
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			rec.Stop() // a failure must not leave it recording into the next tests
		}
	}()
	const rounds, each = 12, 1000
	dropped0 := theSession.s.DroppedEvents.Load()
	for i := range rounds {
		emitCounted(each, i*each)
		theSession.flushNow()
		live, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		chunks := layout(t, live)
		// The flusher's own flush, a second after the last, adds one
		// where a round takes that long (a loaded machine, -race).
		if len(chunks) != 1 || chunks[0].flushes < i+1 {
			t.Fatalf("after flushpoint %d: %d chunks, %+v", i+1, len(chunks), chunks)
		}
		dropped := int(theSession.s.DroppedEvents.Load() - dropped0)
		if got := readEvents(t, live)["test.Counted"]; got+dropped != (i+1)*each {
			t.Fatalf("after flushpoint %d the file holds %d events, %d dropped, want %d", i+1, got, dropped, (i+1)*each)
		}
	}
	dropped := int(theSession.s.DroppedEvents.Load() - dropped0)
	stopped = true
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	chunks := layout(t, data)
	if len(chunks) != 1 || chunks[0].state != 0 || chunks[0].flushes < rounds {
		t.Fatalf("chunks %+v, want one complete chunk with %d flushpoints", chunks, rounds)
	}
	if got := readEvents(t, data)["test.Counted"]; got+dropped != rounds*each {
		t.Fatalf("%d events read, %d dropped, want %d", got, dropped, rounds*each)
	}
	checkJFRCount(t, path, "test.Counted", rounds*each-dropped)
	if jfrBin, err := exec.LookPath("jfr"); err == nil {
		out, err := exec.Command(jfrBin, "print", "--json", "--events", "test.Counted", path).Output()
		if err != nil {
			t.Fatalf("jfr print --json: %v", err)
		}
		if n := strings.Count(string(out), `"type": "test.Counted"`); n != rounds*each-dropped {
			t.Fatalf("jfr print --json prints %d events, want %d", n, rounds*each-dropped)
		}
	}
}

// checkJFRCount checks with jfr summary that the file holds n events of
// type name, when jfr is installed.
func checkJFRCount(t testing.TB, path, name string, n int) {
	t.Helper()
	jfrBin, err := exec.LookPath("jfr")
	if err != nil {
		return
	}
	out, err := exec.Command(jfrBin, "summary", path).CombinedOutput()
	if err != nil {
		t.Fatalf("jfr summary %s: %v\n%s", path, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == name {
			if f[1] != strconv.Itoa(n) {
				t.Fatalf("jfr summary counts %s %s, want %d\n%s", name, f[1], n, out)
			}
			return
		}
	}
	if n != 0 {
		t.Fatalf("jfr summary has no %s, want %d\n%s", name, n, out)
	}
}

// TestKilledAnyMoment kills a child recording to a file in a tight emit
// loop at random moments: each time, our reader and jfr summary read the
// file, and it holds at least the events of the child's first flushpoint.
func TestKilledAnyMoment(t *testing.T) {
	if p := os.Getenv("FLIGHTREC_KILL_LOOP"); p != "" {
		only := Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}
		if _, err := Start(WithFile(p), WithSettings(only)); err != nil {
			os.Exit(2)
		}
		emitCounted(1000)
		theSession.flushNow()
		os.Stdout.WriteString("ready\n")
		for i := 0; ; i++ {
			emitCounted(1000, i)
		}
	}
	trials := 20
	if testing.Short() {
		trials = 5
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for trial := range trials {
		path := filepath.Join(dir, fmt.Sprintf("killed-%d.jfr", trial))
		cmd := exec.Command(os.Args[0], "-test.run=^TestKilledAnyMoment$")
		cmd.Env = append(os.Environ(), "FLIGHTREC_KILL_LOOP="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			skipIfCannotExec(t, err)
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child: %q, %v", line, err)
		}
		wait := time.Duration(rng.Int64N(int64(600 * time.Millisecond)))
		time.Sleep(wait)
		cmd.Process.Kill()
		cmd.Wait()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		chunks := layout(t, data)
		n := readEvents(t, data)["test.Counted"]
		if n < 1000 {
			t.Fatalf("trial %d (killed after %v): %d events survived, want the first flushpoint's 1000", trial, wait, n)
		}
		checkJFRCount(t, path, "test.Counted", n)
		t.Logf("trial %d: killed after %v: %d bytes, %d chunks, %d events", trial, wait, len(data), len(chunks), n)
	}
}

// failingFile fails every write past limit bytes of the file, as a full
// disk does.
type failingFile struct {
	*os.File
	limit int64
}

func (f *failingFile) WriteAt(b []byte, off int64) (int, error) {
	if off+int64(len(b)) > f.limit {
		return 0, syscall.ENOSPC
	}
	return f.File.WriteAt(b, off)
}

// TestWriteError records to a file whose writes start failing: the error
// handler hears of it at the flush that failed, Err returns it, the events
// after it are counted as lost, and the file reads up to the last flush
// written.
func TestWriteError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "full.jfr")
	const limit = 1 << 20
	createFile = func(path string) (sinkFile, error) {
		f, err := os.Create(path)
		return &failingFile{File: f, limit: limit}, err
	}
	defer func() { createFile = func(path string) (sinkFile, error) { return os.Create(path) } }()
	var reported []error
	only := Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}
	rec, err := Start(WithFile(path), WithSettings(only), WithErrorHandler(func(err error) { reported = append(reported, err) }))
	if err != nil {
		t.Fatal(err)
	}
	written, round := 0, 0
	for ; rec.Err() == nil && round < 1000; round++ {
		emitCounted(2000, round*2000)
		theSession.flushNow()
		if rec.Err() == nil {
			written = (round + 1) * 2000
		}
	}
	if rec.Err() == nil || !errors.Is(rec.Err(), syscall.ENOSPC) {
		t.Fatalf("after %d rounds Err() = %v, want ENOSPC", round, rec.Err())
	}
	if len(reported) != 1 || reported[0] != rec.Err() {
		t.Fatalf("handler heard %v, want Err() once when it happened", reported)
	}
	emitCounted(5000)
	theSession.flushNow()
	events, bytes := rec.Lost()
	if events < 5000 || bytes <= 0 {
		t.Fatalf("lost %d events, %d bytes; want the 5000 emitted after the error and more", events, bytes)
	}
	if err := rec.Stop(); err == nil || !strings.Contains(err.Error(), "not written") {
		t.Fatalf("Stop: %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dropped := int(theSession.s.DroppedEvents.Load())
	if n := readEvents(t, data)["test.Counted"]; n > written || n+dropped < written {
		t.Fatalf("file holds %d events, want the %d of the flushes written (%d dropped)", n, written, dropped)
	}
	checkJFRCount(t, path, "test.Counted", readEvents(t, data)["test.Counted"])
}

// TestDiskFull records to a 1 MiB tmpfs until it is full: the recording
// reports ENOSPC when it happens and leaves a file our reader and jfr
// summary read.
func TestDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v %s", err, out)
	}
	defer exec.Command("umount", dir).Run()
	path := filepath.Join(dir, "full.jfr")
	failed := make(chan error, 1)
	only := Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}
	rec, err := Start(WithFile(path), WithSettings(only), WithErrorHandler(func(err error) { failed <- err }))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
loop:
	for i := 0; ; i++ {
		emitCounted(2000, i)
		theSession.flushNow()
		select {
		case err := <-failed:
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("error %v, want ENOSPC", err)
			}
			break loop
		case <-deadline:
			t.Fatal("no error after 10 s of writing to a 1 MiB tmpfs")
		default:
		}
	}
	emitCounted(1000)
	if err := rec.Stop(); err == nil {
		t.Fatal("Stop returned no error")
	}
	if ev, _ := rec.Lost(); ev < 1000 {
		t.Fatalf("lost %d events, want at least the 1000 emitted after the error", ev)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	layout(t, data)
	n := readEvents(t, data)["test.Counted"]
	if n == 0 {
		t.Fatal("no events in the file")
	}
	checkJFRCount(t, path, "test.Counted", n)
}

// TestDataLossAmount drops events too large for a buffer and checks that
// jdk.DataLoss counts the bytes their records would have taken, not the
// most an event of their type could take.
func TestDataLossAmount(t *testing.T) {
	only := Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}, "jdk.DataLoss": {Enabled: Bool(true)}}
	rec, err := Start(WithRing(0, 0), WithSettings(only))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	big := strings.Repeat("x", batch.MaxEventSize+100) // never fits a buffer
	const n = 3
	for range n {
		var ev counted
		countedType.Begin(&ev)
		ev.N, ev.S = 5, big
		ev.Commit()
	}
	var amount, events int64
	eachEvent(t, dumped(t, rec), func(ev *jfr.Event) {
		if ev.Type.Name == "jdk.DataLoss" {
			a, _ := ev.Field("amount")
			e, _ := ev.Field("droppedEvents")
			amount += a.Int()
			events += e.Int()
		}
	})
	if events != n {
		t.Fatalf("jdk.DataLoss counts %d events, want %d", events, n)
	}
	// Each record: a 4-byte size, type id, startTime (up to 9 bytes),
	// goroutine, stack (0), N (5), and the string: tag, 3-byte length,
	// bytes.
	per := amount / n
	if lo, hi := int64(len(big)+4+1+1+1+1+1+3+1), int64(len(big)+4+1+9+3+1+1+1+3); per < lo || per > hi {
		t.Fatalf("jdk.DataLoss counts %d bytes per dropped event, want %d..%d (its record's size)", per, lo, hi)
	}
}

// TestSmallPoolKeys records stack traces, goroutines, functions, pooled
// strings and CPU samples over two chunks, and checks that every
// constant-pool reference in the file is a key below 2^31 (consumers such as
// async-profiler read them as 32-bit ints) that resolves.
func TestSmallPoolKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys.jfr")
	prof, _ := Preset("profile")
	rec, err := Start(WithFile(path), WithSettings(prof))
	if err != nil {
		t.Fatal(err)
	}
	other := make(chan event.Goroutine)
	go func() { other <- event.CurrentGoroutine() }()
	og := <-other
	for i := range 40 {
		if i == 20 {
			theSession.cutNow()
		}
		var ev allKinds
		allKindsType.Begin(&ev)
		ev.S, ev.L, ev.G, ev.Fn = fmt.Sprint(i), "the same literal", og, handlerFunc
		ev.Commit()
	}
	spinSink = spin(300 * time.Millisecond)
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(layout(t, data)); n < 2 {
		t.Fatalf("%d chunks, want 2", n)
	}
	refs := 0
	var check func(v jfr.Value, where string, depth int)
	check = func(v jfr.Value, where string, depth int) {
		switch {
		case v.Kind() == jfr.KindRef || (v.Kind() == jfr.KindString && v.Encoding() == 2):
			refs++
			if v.Key() >= 1<<31 {
				t.Fatalf("%s: key %#x does not fit 31 bits", where, v.Key())
			}
			r := v.Resolve()
			if v.Key() != 0 && r.IsNull() {
				t.Fatalf("%s: key %d does not resolve", where, v.Key())
			}
			if depth < 8 {
				check(r, where+">", depth+1)
			}
		case v.Kind() == jfr.KindStruct || v.Kind() == jfr.KindArray:
			for i, e := range v.Elems() {
				check(e, fmt.Sprintf("%s[%d]", where, i), depth)
			}
		}
	}
	seen := map[string]bool{}
	eachEvent(t, data, func(ev *jfr.Event) {
		seen[ev.Type.Name] = true
		for _, f := range ev.Type.Fields {
			v, _ := ev.Field(f.Name)
			check(v, ev.Type.Name+"."+f.Name, 0)
		}
	})
	if !seen["test.AllKinds"] || (!seen["jdk.ExecutionSample"] && samplesExpected(t)) || refs == 0 {
		t.Fatalf("events %v, %d references", seen, refs)
	}
}
