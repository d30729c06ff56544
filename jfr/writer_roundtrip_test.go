package jfr

import (
	"bytes"
	"errors"
	"io"
	"os/exec"
	"testing"

	"github.com/flightrec/flightrec/internal/testrec"
)

// rewrite reads a recording and writes it again with the Writer: the same
// metadata, every constant of every chunk, every event, and the clock of
// the original chunk headers.
func rewrite(t testing.TB, data []byte) []byte {
	t.Helper()
	var (
		out    bytes.Buffer
		w      *Writer
		cur    *Chunk
		nconst int
	)
	endTicks := func(c *Chunk) int64 {
		h := &c.Header
		return h.StartTicks + h.DurationNanos/1e3*h.TicksPerSecond/1e6
	}
	readEvents(t, data, func(ev *Event) {
		if ev.Chunk != cur {
			h := &ev.Chunk.Header
			if w == nil {
				w = NewWriter(&out, &WriterOptions{StartNanos: h.StartNanos, StartTicks: h.StartTicks, TicksPerSecond: h.TicksPerSecond})
			} else {
				must(t, w.EndChunk(endTicks(cur)))
			}
			cur = ev.Chunk
			must(t, w.SetMetadata(cur.Metadata))
			must(t, w.StartChunk(h.StartTicks))
			for _, cl := range cur.PoolClasses() {
				cur.PoolKeys(cl, func(key uint64, v Value) {
					nconst++
					must(t, w.AddConstant(cl, key, v))
				})
			}
		}
		must(t, w.WriteEvent(ev.Type, ev.Fields))
	})
	must(t, w.EndChunk(endTicks(cur)))
	must(t, w.Close())
	t.Logf("rewrote %d chunks, %d constants: %d bytes -> %d bytes", cur.Index+1, nconst, len(data), out.Len())
	return out.Bytes()
}

// compareRecordings reads two recordings in lockstep and reports every
// difference in chunk clocks, constants and events, comparing references by
// the content they resolve to.
func compareRecordings(t testing.TB, want, got []byte) {
	t.Helper()
	rw := NewReader(bytes.NewReader(want), nil)
	rg := NewReader(bytes.NewReader(got), nil)
	var (
		ew, eg   Event
		cur      *Chunk
		d        valueDiff
		events   int
		failures int
	)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf(format, args...)
		if failures++; failures > 20 {
			t.FailNow()
		}
	}
	for {
		errW := rw.ReadEvent(&ew)
		errG := rg.ReadEvent(&eg)
		if errors.Is(errW, io.EOF) && errors.Is(errG, io.EOF) {
			break
		}
		if errW != nil || errG != nil {
			t.Fatalf("after %d events: original: %v, rewritten: %v", events, errW, errG)
		}
		if ew.Chunk != cur {
			cur = ew.Chunk
			d = valueDiff{resolve: true} // keys are chunk-local
			compareChunks(t, &d, ew.Chunk, eg.Chunk, fail)
		}
		if ew.Type.Name != eg.Type.Name || len(ew.Fields) != len(eg.Fields) {
			t.Fatalf("event %d: type %s, rewritten %s", events, ew.Type.Name, eg.Type.Name)
		}
		for i := range ew.Fields {
			if s := d.diff(ew.Type.Name+"."+ew.Type.Fields[i].Name, ew.Fields[i], eg.Fields[i]); s != "" {
				fail("event %d: %s", events, s)
			}
		}
		if !ew.StartTime().Equal(eg.StartTime()) || ew.Duration() != eg.Duration() {
			fail("event %d: time %v+%v, rewritten %v+%v", events, ew.StartTime(), ew.Duration(), eg.StartTime(), eg.Duration())
		}
		events++
	}
	if cw, cg := rw.Chunk().Index, rg.Chunk().Index; cw != cg {
		t.Errorf("%d chunks, rewritten %d", cw+1, cg+1)
	}
	t.Logf("%d events equal", events)
}

func compareChunks(t testing.TB, d *valueDiff, cw, cg *Chunk, fail func(string, ...any)) {
	t.Helper()
	hw, hg := cw.Header, cg.Header
	if hw.StartTicks != hg.StartTicks || hw.TicksPerSecond != hg.TicksPerSecond {
		fail("chunk %d: clock %d ticks at %d/s, rewritten %d at %d/s", cw.Index, hw.StartTicks, hw.TicksPerSecond, hg.StartTicks, hg.TicksPerSecond)
	}
	// The writer derives every header from one clock; the JVM reads its
	// clocks anew per chunk, so later chunks may differ by a little.
	if diff := hg.StartNanos - hw.StartNanos; diff != 0 && (cw.Index == 0 || diff > 1e6 || diff < -1e6) {
		fail("chunk %d: start %d ns, rewritten %d ns", cw.Index, hw.StartNanos, hg.StartNanos)
	}
	if hg.State != 0 || hg.Flags&FlagCompressedInts == 0 {
		fail("chunk %d: rewritten state %d flags %#x", cw.Index, hg.State, hg.Flags)
	}
	if a, b := metadataText(cw.Metadata), metadataText(cg.Metadata); a != b {
		fail("chunk %d: metadata differs", cw.Index)
	}
	n := 0
	for _, cl := range cw.PoolClasses() {
		clg := cg.Metadata.ClassByName(cl.Name)
		cw.PoolKeys(cl, func(key uint64, v Value) {
			n++
			vg, ok := cg.Constant(clg, key)
			if !ok {
				fail("chunk %d: constant %s %d missing", cw.Index, cl.Name, key)
				return
			}
			if s := d.diff(cl.Name, v, vg); s != "" {
				fail("chunk %d: constant %d: %s", cw.Index, key, s)
			}
		})
	}
	if n == 0 {
		fail("chunk %d: no constants", cw.Index)
	}
}

func TestRoundTripJDKRecordings(t *testing.T) {
	for _, file := range []string{"jdk17-sample.jfr.gz", "jdk17-sample-multichunk.jfr.gz"} {
		t.Run(file, func(t *testing.T) {
			data := openTestdata(t, file)
			out := rewrite(t, data)
			compareRecordings(t, data, out)
			if _, err := exec.LookPath("jfr"); err == nil {
				testrec.RunJFR(t, "summary", writeTemp(t, "rewritten.jfr", out))
			}
		})
	}
}
