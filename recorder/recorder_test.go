package recorder

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/clock"
	"github.com/flightrec/flightrec/internal/jfrtool"
	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/jfr"
)

type allKinds struct {
	event.Timed
	B   bool            `label:"Bool"`
	I8  int8            `label:"Int8"`
	I16 int16           `label:"Int16"`
	I32 int32           `label:"Int32"`
	I64 int64           `label:"Int64" content:"bytes"`
	U8  uint8           `label:"Uint8"`
	U16 uint16          `label:"Uint16"`
	U32 uint32          `label:"Uint32" content:"frequency"`
	U64 uint64          `label:"Uint64" content:"address"`
	F32 float32         `label:"Float32" content:"percentage"`
	F64 float64         `label:"Float64"`
	S   string          `label:"String"`
	L   string          `label:"Repeated String"` // pooled from its second use
	D   int64           `label:"Millis" content:"ms"`
	G   event.Goroutine `label:"Other Goroutine"`
	Fn  event.Func      `label:"Handler"`
	At  time.Time       `label:"At"`
	Ns  int64           `label:"At (ns)" content:"timestamp"`
	Dur time.Duration   `label:"Took"`
}

type counted struct {
	event.Instant
	N int64  `label:"N"`
	S string `label:"S"`
}

var (
	allKindsType = event.Define[allKinds](event.Info{Name: "test.AllKinds", Label: "All Kinds", Category: []string{"Test"}, StackTrace: true})
	countedType  = event.Define[counted](event.Info{Name: "test.Counted", Label: "Counted"})
)

// readEvents counts events by type name with our reader.
func readEvents(t testing.TB, data []byte) map[string]int {
	counts := map[string]int{}
	eachEvent(t, data, func(ev *jfr.Event) { counts[ev.Type.Name]++ })
	return counts
}

// eachEvent calls f with every event of data, read with our reader.
func eachEvent(t testing.TB, data []byte, f func(*jfr.Event)) {
	t.Helper()
	r := jfr.NewBytesReader(data, nil)
	var ev jfr.Event
	for {
		err := r.ReadEvent(&ev)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		f(&ev)
	}
}

// dumped returns what a ring recording holds so far, as a file.
func dumped(t testing.TB, rec *Recording) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := rec.Dump(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

//go:noinline
func spin(d time.Duration) int {
	x := 0
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := range 10000 {
			x += i * i
		}
	}
	return x
}

// TestInterop records every event type the recorder writes and checks that
// jfr print --json and our printer agree byte for byte.
func TestInterop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "all.jfr")
	prof, _ := Preset("profile")
	rec, err := Start(WithFile(path), WithSettings(prof), WithMaxChunkAge(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	event.SetGoroutineName("test-main", "role", "test")
	defer event.SetGoroutineName("")
	other := make(chan event.Goroutine)
	go func() { other <- event.CurrentGoroutine() }()
	og := <-other
	at := time.Date(2026, 11, 21, 12, 34, 56, 789_000_000, time.UTC)
	for i := range 20 {
		var ev allKinds
		allKindsType.Begin(&ev)
		if ev.ShouldCommit() {
			ev.B, ev.I8, ev.I16, ev.I32, ev.I64 = i%2 == 0, -8, -16, -32, -64<<20
			ev.U8, ev.U16, ev.U32, ev.U64 = 200, 60000, 4000000000, 1<<63+5
			ev.F32, ev.F64, ev.S, ev.D, ev.G = 0.25, -1.5e300, fmt.Sprintf("é-%d", i), 1500, og
			ev.L = "the same literal, é"
			ev.Fn, ev.At, ev.Ns, ev.Dur = handlerFunc, at, at.UnixNano(), 1500*time.Microsecond
		}
		ev.Commit()
	}
	runtime.GC()
	spinSink = spin(700 * time.Millisecond)
	runtime.GC()
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	counts := readEvents(t, data)
	for _, name := range append([]string{"test.AllKinds", "jdk.GarbageCollection", "jdk.GCHeapSummary", "jdk.CPULoad",
		"jdk.JavaThreadStatistics", "go.RuntimeMetric", "jdk.ExecutionSample", "jdk.ActiveRecording", "jdk.ActiveSetting"}, factTypeNames...) {
		if counts[name] == 0 && (name != "jdk.ExecutionSample" || samplesExpected(t)) {
			t.Errorf("no %s events; have %v", name, counts)
		}
	}
	var ours bytes.Buffer
	if err := jfrtool.Print(&ours, jfr.NewBytesReader(data, nil), jfrtool.FormatJSON, jfrtool.PrintOptions{StackDepth: 5}); err != nil {
		t.Fatal(err)
	}
	// Timestamps go through the tick clock: exact to a tick, 1.5 ns here.
	for _, want := range []string{`"at": "2026-11-21T12:34:56.78`, `"ns": "2026-11-21T12:34:56.78`, `"dur": "PT0.0015S"`,
		`"name": "github.com\/flightrec\/flightrec\/recorder"`, `"name": "handler"`} {
		if n := strings.Count(ours.String(), want); n < 20 {
			os.WriteFile(filepath.Join(os.TempDir(), "interop-ours.json"), ours.Bytes(), 0o644)
			t.Errorf("%s appears %d times, want 20 or more", want, n)
		}
	}
	if n := strings.Count(ours.String(), `"l": "the same literal, \u00e9"`); n != 20 {
		os.WriteFile(filepath.Join(os.TempDir(), "interop-ours.json"), ours.Bytes(), 0o644)
		t.Errorf("the pooled string appears %d times, want 20", n)
	}
	jfrBin, err := exec.LookPath("jfr")
	if err != nil {
		t.Skip("jfr not installed")
	}
	theirs, err := exec.Command(jfrBin, "print", "--json", path).Output()
	if err != nil {
		t.Fatalf("jfr print --json: %v", err)
	}
	if !bytes.Equal(ours.Bytes(), theirs) {
		os.WriteFile(filepath.Join(os.TempDir(), "interop-ours.json"), ours.Bytes(), 0o644)
		os.WriteFile(filepath.Join(os.TempDir(), "interop-jfr.json"), theirs, 0o644)
		t.Fatalf("our JSON (%d bytes) differs from jfr's (%d bytes); see %s/interop-*.json", ours.Len(), len(theirs), os.TempDir())
	}
}

func handler() {}

var handlerFunc = event.FuncOf(handler)

// emitCounted emits n events numbered from base (0 if not given).
func emitCounted(n int, base ...int) {
	b := 0
	if len(base) > 0 {
		b = base[0]
	}
	for i := range n {
		var ev counted
		countedType.Begin(&ev)
		if ev.ShouldCommit() {
			ev.N, ev.S = int64(b+i), "x"
		}
		ev.Commit()
	}
}

func TestSettingsMidRecording(t *testing.T) {
	rec, err := Start(WithRing(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	emitCounted(100)
	rec.SetSettings(Settings{"test.Counted": {Enabled: Bool(false)}})
	if countedType.Enabled() {
		t.Fatal("still enabled")
	}
	emitCounted(50)
	rec.SetSettings(Settings{"test.Counted": {Enabled: Bool(true)}})
	emitCounted(7)
	data := dumped(t, rec)
	if got := readEvents(t, data)["test.Counted"]; got != 107 {
		t.Fatalf("got %d test.Counted events, want 107", got)
	}
}

type slowEvent struct {
	event.Timed
	N int64 `label:"N"`
}

var slowType = event.Define[slowEvent](event.Info{Name: "test.Slow", Label: "Slow"})

// emitSlow emits a timed event lasting at least d, numbered n; with
// should, the caller asks ShouldCommit first, which then decides, else
// Commit alone does. It reports what ShouldCommit said.
func emitSlow(n int64, d time.Duration, should bool) bool {
	var ev slowEvent
	slowType.Begin(&ev)
	spinSink += spin(d)
	ok := true
	if should {
		if ok = ev.ShouldCommit(); ok {
			ev.N = n
		}
	} else {
		ev.N = n
	}
	ev.Commit()
	return ok
}

// TestThreshold checks that timed events shorter than their type's
// threshold are dropped, whether ShouldCommit or Commit ends them, and
// that a threshold changed mid-recording takes effect.
func TestThreshold(t *testing.T) {
	set := func(th time.Duration) Settings {
		return Settings{"*": {Enabled: Bool(false)}, "test.Slow": {Enabled: Bool(true), Threshold: &th}}
	}
	rec, err := Start(WithRing(0, 0), WithSettings(set(20*time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	for i, should := range []bool{true, false} {
		if emitSlow(int64(10*i+1), 0, should) != !should {
			t.Errorf("ShouldCommit of a short event: want false")
		}
		if !emitSlow(int64(10*i+2), 30*time.Millisecond, should) {
			t.Errorf("ShouldCommit of a long event: want true")
		}
	}
	rec.SetSettings(set(0))
	emitSlow(3, 0, true)
	emitSlow(4, 0, false)
	var got []int64
	eachEvent(t, dumped(t, rec), func(ev *jfr.Event) {
		if ev.Type.Name != "test.Slow" {
			return
		}
		v, ok := ev.Field("n")
		if !ok {
			t.Fatal("no field n")
		}
		n := v.Int()
		got = append(got, n)
		if d := ev.Duration(); n%10 == 2 && d < 20*time.Millisecond {
			t.Errorf("event %d lasted %v", n, d)
		}
	})
	slices.Sort(got)
	if want := []int64{2, 3, 4, 12}; !slices.Equal(got, want) {
		t.Errorf("recorded events %v, want %v", got, want)
	}
}

// TestThresholdOutlivesDisable: an event begun while its type is on, with
// a threshold, and ended after the type is turned off still obeys that
// threshold. Turning the type off used to zero the threshold before
// clearing the enabled flag, so such an event was recorded however short
// (a flaky failure of TestCtlCommands).
func TestThresholdOutlivesDisable(t *testing.T) {
	th := 20 * time.Millisecond
	rec, err := Start(WithRing(0, 0), WithSettings(Settings{"*": {Enabled: Bool(false)}, "test.Slow": {Enabled: Bool(true), Threshold: &th}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	var ev slowEvent
	slowType.Begin(&ev)
	ev.N = 1
	rec.SetSettings(Settings{"*": {Enabled: Bool(false)}})
	ev.Commit()
	eachEvent(t, dumped(t, rec), func(ev *jfr.Event) {
		if ev.Type.Name == "test.Slow" {
			t.Errorf("recorded a test.Slow lasting %v, under its threshold of %v", ev.Duration(), th)
		}
	})
}

func TestRingLimits(t *testing.T) {
	// Only the test's events: periodic runtime events would make what the
	// newest 64 KiB hold depend on timing.
	only := Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}
	rec, err := Start(WithRing(64<<10, 0), WithMaxChunkAge(50*time.Millisecond), WithSettings(only))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	for range 20 {
		emitCounted(2000)
		time.Sleep(20 * time.Millisecond)
	}
	// The newest events land in the chunk Dump flushes, which the ring
	// always keeps; how many older chunks fit in 64 KiB depends on timing.
	// Cut a chunk first so the bursts' events are all in older chunks.
	theSession.flushNow()
	emitCounted(100)
	data := dumped(t, rec)
	rec.mu.Lock()
	nchunks, last := len(rec.chunks), len(rec.chunks[len(rec.chunks)-1].data)
	rec.mu.Unlock()
	if len(data) > 64<<10+last {
		t.Fatalf("ring holds %d bytes in %d chunks, over 64 KiB plus a chunk", len(data), nchunks)
	}
	if n := readEvents(t, data)["test.Counted"]; n < 100 || n >= 40100 {
		t.Fatalf("ring kept %d of 40100 events (%d bytes in %d chunks), want the newest 100 and not all", n, len(data), nchunks)
	}

	age, err := Start(WithRing(0, 200*time.Millisecond), WithMaxChunkAge(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer age.Stop()
	time.Sleep(600 * time.Millisecond)
	age.mu.Lock()
	first, lastEnd := age.chunks[0].end, age.chunks[len(age.chunks)-1].end
	age.mu.Unlock()
	if d := lastEnd.Sub(first); d > 200*time.Millisecond {
		t.Fatalf("ring spans %v, maxAge 200ms", d)
	}
}

func TestEnabledAllocs(t *testing.T) {
	rec, err := Start(WithRing(1<<20, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	if n := testing.AllocsPerRun(10000, func() { emitCounted(1) }); n != 0 {
		t.Fatalf("enabled emit allocates %v times", n)
	}
}

// TestConcurrentEmit checks that every event of goroutines emitting at
// once is recorded, or counted as dropped, exactly once, while chunks are
// cut under them: a buffer's published part goes into one chunk and the
// rest into a later one.
func TestConcurrentEmit(t *testing.T) {
	rec, err := Start(WithRing(0, 0), WithSettings(Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	// Rounds of concurrent emitting with a chunk cut after each: the P
	// buffers span several rounds, so their published parts go into one
	// chunk and the rest into later ones.
	const workers, rounds, perRound = 8, 10, 500
	const each = rounds * perRound
	for r := range rounds {
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perRound {
					emitCounted(1, r*perRound+i)
				}
			}()
		}
		if r%2 == 0 {
			theSession.flushNow() // sometimes while the round emits
		}
		wg.Wait()
		theSession.flushNow()
	}
	data := dumped(t, rec)
	// Each goroutine emitted n = 0..each-1 once.
	seen := map[[2]uint64]int{}
	eachEvent(t, data, func(ev *jfr.Event) {
		if ev.Type.Name == "test.Counted" {
			g, _ := ev.Field("eventThread")
			n, _ := ev.Field("n")
			seen[[2]uint64{g.Key(), uint64(n.Int())}]++
		}
	})
	dropped := int(theSession.s.DroppedEvents.Load())
	for k, c := range seen {
		if c != 1 {
			t.Fatalf("goroutine %d event %d recorded %d times", k[0], k[1], c)
		}
	}
	if len(seen)+dropped != workers*each || len(seen) == 0 {
		t.Fatalf("%d events recorded + %d dropped, want %d", len(seen), dropped, workers*each)
	}
}

// TestKilled runs a recording in a child process, kills it with SIGKILL
// after about 1.5 s, and reads the complete chunks it left.
func TestKilled(t *testing.T) {
	if p := os.Getenv("FLIGHTREC_KILL_CHILD"); p != "" {
		if _, err := Start(WithFile(p)); err != nil {
			os.Exit(2)
		}
		for {
			emitCounted(100)
			time.Sleep(time.Millisecond)
		}
	}
	path := filepath.Join(t.TempDir(), "killed.jfr")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilled$")
	cmd.Env = append(os.Environ(), "FLIGHTREC_KILL_CHILD="+path)
	if err := cmd.Start(); err != nil {
		skipIfCannotExec(t, err)
		t.Fatal(err)
	}
	// Kill half a flush period after the first flush is in the file. A
	// fixed sleep of 2.5 s from the start killed the child before its
	// first flush on a loaded machine (load 9 on 2 cores).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if data, err := os.ReadFile(path); err == nil {
			if n, _ := countCounted(data); n > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("no flush in the child's file within a minute")
		}
	}
	time.Sleep(500 * time.Millisecond)
	cmd.Process.Kill()
	cmd.Wait()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := readEvents(t, data)["test.Counted"]; got == 0 {
		t.Fatal("no events survived")
	}
	if jfrBin, err := exec.LookPath("jfr"); err == nil {
		if out, err := exec.Command(jfrBin, "summary", path).CombinedOutput(); err != nil {
			t.Fatalf("jfr summary: %v\n%s", err, out)
		}
	}
}

// spinSink keeps spin's work from being optimised away.
var spinSink int

// TestNameOutlivesGoroutine checks that a goroutine that names itself,
// emits, forgets its name and exits is still named in the chunk holding
// its events, and that stack traces start in the emitting function, not
// in package event.
func TestNameOutlivesGoroutine(t *testing.T) {
	rec, err := Start(WithRing(0, 0), WithSettings(Settings{"test.Counted": {StackTrace: Bool(true)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		event.SetGoroutineName("short-lived")
		defer event.SetGoroutineName("")
		emitCounted(3)
	}()
	<-done
	// Two chunks written elsewhere meanwhile (one being written, one
	// queued) must not forget the name before the chunk holding the
	// events is written.
	batch.SweepNames()
	batch.SweepNames()
	data := dumped(t, rec)
	var out bytes.Buffer
	if err := jfrtool.Print(&out, jfr.NewBytesReader(data, nil), jfrtool.FormatPretty, jfrtool.PrintOptions{StackDepth: 6}); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if n := strings.Count(text, `eventThread = "short-lived"`); n != 3 {
		t.Errorf("%d events of the named goroutine, want 3:\n%s", n, text)
	}
	if n := strings.Count(text, "recorder.emitCounted()"); n != 3 {
		t.Errorf("%d stacks starting in emitCounted, want 3:\n%s", n, text)
	}
}

// TestStackKeysPastFullTable fills the session's table of stack ids, as
// a long recording of many distinct stacks would: events with a stack
// trace must then renew it and keep small keys (async-profiler reads
// them as 32-bit), with their stacks intact.
func TestStackKeysPastFullTable(t *testing.T) {
	rec, err := Start(WithRing(0, 0), WithSettings(Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true), StackTrace: Bool(true)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	s := batch.Active()
	full := false
	for i := range 1 << 20 {
		// Full: 0, or (before tables were renewed) a hash for a key.
		if k := s.StackID([]uintptr{uintptr(i + 1), 0x2000}); k == 0 || k >= 1<<30 {
			full = true
			break
		}
	}
	if !full {
		t.Fatal("the table of stack ids did not fill")
	}
	emitCounted(3)
	var keys []uint64
	eachEvent(t, dumped(t, rec), func(ev *jfr.Event) {
		if ev.Type.Name == "test.Counted" {
			st, _ := ev.Field("stackTrace")
			keys = append(keys, st.Key())
		}
	})
	if len(keys) != 3 {
		t.Fatalf("%d events, want 3", len(keys))
	}
	for _, k := range keys {
		if k == 0 || k >= 1<<31 {
			t.Errorf("stack key %d: want a small id", k)
		}
	}
	var out bytes.Buffer
	if err := jfrtool.Print(&out, jfr.NewBytesReader(dumped(t, rec), nil), jfrtool.FormatPretty, jfrtool.PrintOptions{StackDepth: 6}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "recorder.emitCounted()"); n != 3 {
		t.Errorf("%d stacks starting in emitCounted, want 3:\n%s", n, out.String())
	}
}

// TestSetTimeBeforeStart records events dated before the process started:
// their ticks are negative, which takes the 9-byte varint form; the
// fields after them must still read back.
func TestSetTimeBeforeStart(t *testing.T) {
	rec, err := Start(WithRing(0, 0), WithSettings(Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	times := []time.Time{time.Now().Add(-time.Hour), time.Now().Add(-time.Hour).Round(0), time.Now().AddDate(-3, 0, 0), {}}
	for i, at := range times {
		var ev counted
		countedType.Begin(&ev)
		ev.SetTime(at)
		ev.N, ev.S = int64(12345+i), "after the time"
		ev.Commit()
	}
	type got struct {
		n     int64
		s     string
		start time.Time
	}
	var events []got
	eachEvent(t, dumped(t, rec), func(ev *jfr.Event) {
		if ev.Type.Name == "test.Counted" {
			n, _ := ev.Field("n")
			s, _ := ev.Field("s")
			events = append(events, got{n.Int(), s.String(), ev.StartTime()})
		}
	})
	if len(events) != len(times) {
		t.Fatalf("read %d events, want %d", len(events), len(times))
	}
	for i, e := range events {
		if e.n != int64(12345+i) || e.s != "after the time" {
			t.Errorf("event %d: n=%d s=%q", i, e.n, e.s)
		}
		want := times[i]
		if want.IsZero() {
			want = time.Now() // the zero time is ignored: Commit's time
		}
		if d := e.start.Sub(want); d < -time.Second || d > time.Second {
			t.Errorf("event %d: start %v, want %v", i, e.start, want)
		}
	}
}

// TestTimeLengths records events whose times' varints take 1 to 9
// bytes, in an order where each differs from the last: the emit path
// takes the length from a cache of the last event's (leb128.LenRange),
// and an event that kept a stale length would misplace every byte after
// its time.
func TestTimeLengths(t *testing.T) {
	rec, err := Start(WithRing(0, 0), WithSettings(Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	ep, tps := clock.Epoch(), clock.TicksPerSecond()
	// at returns the time of tick k (within a tick or so: TicksAt rounds).
	at := func(k int64) time.Time {
		d := k - ep.Ticks
		return time.Unix(0, ep.UnixNanos+d/tps*1e9+d%tps*1e9/tps)
	}
	// A tick in the middle of the values whose varints take n bytes (9:
	// negative, before the process started).
	tick := func(n int) int64 {
		if n == 9 {
			return -tps
		}
		lo := int64(1) << (7 * (n - 1))
		if n == 1 {
			lo = 16
		}
		return lo + lo/2
	}
	lengths := []int{5, 1, 8, 2, 5, 7, 3, 9, 4, 6, 5, 5, 1, 1, 8}
	var want []int64
	for i, n := range lengths {
		var ev counted
		countedType.Begin(&ev)
		when := at(tick(n))
		ev.SetTime(when)
		ev.N, ev.S = int64(i), "after the time"
		ev.Commit()
		k := clock.TicksAt(when.UnixNano())
		if l := leb128.Len(uint64(k)); l != n {
			t.Fatalf("tick %d takes %d bytes, want %d", k, l, n)
		}
		want = append(want, k)
	}
	type got struct{ n, start int64 }
	var events []got
	eachEvent(t, dumped(t, rec), func(ev *jfr.Event) {
		if ev.Type.Name == "test.Counted" {
			n, _ := ev.Field("n")
			s, _ := ev.Field("s")
			if s.String() != "after the time" {
				t.Errorf("event %d: s=%q", n.Int(), s.String())
			}
			events = append(events, got{n.Int(), ev.StartTicks()})
		}
	})
	if len(events) != len(lengths) {
		t.Fatalf("read %d events, want %d", len(events), len(lengths))
	}
	// The recorder recalibrates the clock at chunk starts: its ticks may
	// differ from want's a little.
	for i, e := range events {
		if d := e.start - want[i]; e.n != int64(i) || d < -tps/1000 || d > tps/1000 {
			t.Errorf("event %d (time of %d bytes): n=%d, start %d, want %d", i, lengths[i], e.n, e.start, want[i])
		}
	}
}

var lateRuns atomic.Int64

type lateEvent struct {
	event.Instant
	N int64 `label:"N"`
}

// TestDefineWhileRecording defines an event type while a recording runs
// (as a package initialised late would): Define returns, and the type's
// events are recorded under the recording's settings.
func TestDefineWhileRecording(t *testing.T) {
	rec, err := Start(WithRing(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	// A name of its own on every run: go test -count defines it again.
	name := fmt.Sprintf("test.Late%d", lateRuns.Add(1))
	defined := make(chan *event.Type[lateEvent])
	go func() { defined <- event.Define[lateEvent](event.Info{Name: name, Label: "Late"}) }()
	var late *event.Type[lateEvent]
	select {
	case late = <-defined:
	case <-time.After(10 * time.Second):
		t.Fatal("Define blocked while a recording runs")
	}
	if !late.Enabled() {
		t.Fatal("a type defined while recording is not enabled")
	}
	for i := range 5 {
		var ev lateEvent
		late.Begin(&ev)
		ev.N = int64(i)
		ev.Commit()
	}
	data := dumped(t, rec)
	if n := readEvents(t, data)[name]; n != 5 {
		t.Fatalf("%d %s events, want 5", n, name)
	}
}

// TestStartWhileStopping starts a recording while the last one stops: the
// new one must record, whichever goes first.
func TestStartWhileStopping(t *testing.T) {
	only := WithSettings(Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}})
	for i := range 200 {
		old, err := Start(WithRing(0, 0), only)
		if err != nil {
			t.Fatal(err)
		}
		stopped := make(chan error)
		go func() { stopped <- old.Stop() }()
		// Vary the moment so that some starts land inside the stop.
		time.Sleep(time.Duration(i%40) * 50 * time.Microsecond)
		rec, err := Start(WithRing(0, 0), only)
		if err != nil {
			t.Fatal(err)
		}
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		emitCounted(100)
		data := dumped(t, rec)
		if err := rec.Stop(); err != nil {
			t.Fatal(err)
		}
		if n := readEvents(t, data)["test.Counted"]; n != 100 {
			t.Fatalf("round %d: %d events, want 100", i, n)
		}
	}
}

// emitStacked emits one bench.StackEvent, whose type has a generated
// Commit, and one test.Counted, whose type has not.
//
//go:noinline
func emitStacked() {
	var ev benchEvent
	benchStackType.Begin(&ev)
	ev.Commit()
	emitCounted(1)
}

// TestStackStartsAtCaller checks that a stack trace starts in the function
// that called Commit, through a generated Commit as through the generic
// one: no frame of package event, of flightrecCommit or of the inlined
// generated Commit.
func TestStackStartsAtCaller(t *testing.T) {
	rec, err := Start(WithRing(0, 0), WithSettings(Settings{"*": {Enabled: Bool(false)},
		"bench.StackEvent": {Enabled: Bool(true), StackTrace: Bool(true)},
		"test.Counted":     {Enabled: Bool(true), StackTrace: Bool(true)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	emitStacked()
	var out bytes.Buffer
	if err := jfrtool.Print(&out, jfr.NewBytesReader(dumped(t, rec), nil), jfrtool.FormatPretty, jfrtool.PrintOptions{StackDepth: 2}); err != nil {
		t.Fatal(err)
	}
	tops := map[string]string{}
	event := ""
	lines := strings.Split(out.String(), "\n")
	for i, line := range lines {
		if strings.HasSuffix(line, " {") && !strings.HasPrefix(line, " ") {
			event = strings.TrimSuffix(line, " {")
		}
		if strings.Contains(line, "stackTrace = [") && i+1 < len(lines) {
			tops[event] = strings.TrimSpace(lines[i+1])
		}
	}
	for name, want := range map[string]string{
		"bench.StackEvent": "github.com.flightrec.flightrec.recorder.emitStacked()",
		"test.Counted":     "github.com.flightrec.flightrec.recorder.emitCounted()",
	} {
		if !strings.HasPrefix(tops[name], want) {
			t.Errorf("%s: stack starts at %q, want %s...\n%s", name, tops[name], want, out.String())
		}
	}
}
