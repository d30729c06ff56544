package flow

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/internal/flowspec"
)

// readSpans reads every span of src (copies) and its final error.
func readSpans(t *testing.T, src source) ([]rawSpan, error) {
	t.Helper()
	var out []rawSpan
	b := &spanBatch{}
	var sp rawSpan
	for {
		if err := src.next(&sp); err != nil {
			return append(out, b.spans...), err
		}
		b.add(&sp)
	}
}

// logMerger returns a Merger with what pass 1's interning and pass 2's
// replay use: an ID table, its per-message arrays, a clock offset.
func logMerger() *Merger {
	return &Merger{ids: newIDTable(), Offsets: []int64{12345},
		refs: newSpilled[int32](nil, "refs"), sendWall: newSpilled[int64](nil, "sends"), sendNode: newSpilled[uint16](nil, "senders")}
}

// keyedSpans reads every span of src as pass 1 does and interns its IDs
// in m; it returns copies of the spans, their keys (spanKeys), their
// events' (eventMsgs) and src's final error.
func keyedSpans(tb testing.TB, m *Merger, src source) (spans []rawSpan, keys [][]uint32, msgs [][]int32, err error) {
	tb.Helper()
	b := &spanBatch{}
	ids := &spanIDs{find: m.intern}
	for {
		n := len(b.spans)
		if err := src.(batchSource).nextInto(b); err != nil {
			return b.spans, keys, msgs, err
		}
		sp := &b.spans[n]
		ids.reset()
		k := spanKeys(sp, nil, ids.key)
		e := eventMsgs(sp, nil, ids.key)
		keys, msgs = append(keys, k), append(msgs, e)
	}
}

// logSpans reads every span of src as pass 1 does, through a read-ahead
// that writes the span log as its batches come back, interns its IDs in
// m and notes their keys; it returns copies of the spans and src's final
// error, and closes src.
func logSpans(t *testing.T, m *Merger, src source, l *spanLog) ([]rawSpan, error) {
	t.Helper()
	logged := &loggingSource{source: src, log: l}
	r := newLoggingReadAhead(logged)
	defer r.Close()
	read := &spanBatch{}
	ids := &spanIDs{find: m.intern}
	var sp rawSpan
	var keys []uint32
	var msgs []int32
	for {
		err := r.next(&sp)
		if err != nil {
			if err != logged.endErr {
				t.Fatalf("loggingSource ended with %v, kept %v", err, logged.endErr)
			}
			if ferr := l.finish(); ferr != nil {
				t.Fatal(ferr)
			}
			return read.spans, err
		}
		read.add(&sp)
		ids.reset()
		keys = spanKeys(&sp, keys[:0], ids.key)
		msgs = eventMsgs(&sp, msgs[:0], ids.key)
		r.noteKeys(keys, msgs)
	}
}

// replayAll replays a span log into merge spans.
func replayAll(rs *replaySource) ([]mergeSpan, error) {
	b := &spanBatch{}
	for {
		if err := rs.nextInto(b); err != nil {
			return b.merged, err
		}
	}
}

// wantMerged converts read spans as pass 2 must see them, from the
// spans' IDs looked up in m's table (not from the log): keys, events
// (a non-causal span's retransmissions only), their message keys,
// corrected times, numbers and flags.
func wantMerged(t *testing.T, m *Merger, spans []rawSpan) []mergeSpan {
	t.Helper()
	look := func(id []byte) int32 {
		k, ok := m.ids.Lookup(id)
		if !ok {
			t.Fatalf("ID %q not interned", id)
		}
		return int32(k)
	}
	var out []mergeSpan
	for i := range spans {
		sp := &spans[i]
		ms := mergeSpan{nonCausal: sp.nonCausal, truncated: sp.truncated, unfinished: sp.unfinished,
			nevents: len(sp.events), endAt: sp.lastWall - m.Offsets[0]}
		var ids [][]byte
		if sp.in != nil && !sp.nonCausal {
			ids = append(ids, sp.in)
		}
		for _, id := range append(ids, sp.out...) {
			if k := uint32(look(id)); !slices.Contains(ms.keys, k) {
				ms.keys = append(ms.keys, k)
			}
		}
		handled := false
		for _, e := range sp.events {
			handled = handled || e.kind == flowspec.HandleStart && sp.in != nil && bytes.Equal(e.msg, sp.in)
		}
		for j, e := range sp.events {
			if sp.nonCausal && (e.kind != flowspec.NonCausalSend || e.msg == nil) {
				continue
			}
			ev := Event{Nano: e.nano, Wall: e.wall - m.Offsets[0], RawWall: e.wall, Text: string(e.text), Msg: -1,
				Thread: e.thread, Span: uint32(i + 1), Ordinal: sp.ordinal, Seq: uint32(j), Kind: e.kind, Unfinished: sp.unfinished}
			switch {
			case e.msg != nil:
				ev.Msg = look(e.msg)
			case e.kind == flowspec.Received && handled && !sp.nonCausal:
				ev.Msg = look(sp.in)
			}
			ms.events = append(ms.events, ev)
		}
		out = append(out, ms)
	}
	return out
}

// sameMerged compares merge spans field for field; nil and empty slices
// are alike.
func sameMerged(a, b *mergeSpan) bool {
	return len(a.keys) == len(b.keys) && len(a.events) == len(b.events) && (len(a.keys) == 0 || slices.Equal(a.keys, b.keys)) &&
		(len(a.events) == 0 || slices.Equal(a.events, b.events)) && a.endAt == b.endAt && a.nevents == b.nevents &&
		a.nonCausal == b.nonCausal && a.truncated == b.truncated && a.unfinished == b.unfinished
}

// TestSpanLogReplay: the spans pass 2 replays from the span log, written
// by pass 1's read-ahead as its batches come back with the message keys
// pass 1's merge found, are the spans pass 1 read as pass 2 merges them, field for field (keys, events kept, their message keys, an ID
// only an event names, flags, numbers, corrected times), with the same
// end: io.EOF for a whole recording, the damage error for one cut short.
func TestSpanLogReplay(t *testing.T) {
	ins, rec := genJFRInputs(t, 500)
	text, err := ins[3].Open()
	if err != nil {
		t.Fatal(err)
	}
	log, _ := io.ReadAll(text)
	// A span longer than a replay block, and many short ones after it
	// that cross the blocks' ends.
	long := "1000=1700000000000\nSPAN;null;1:1\nE;1000;main;ODStarted;1:1\nE;2000;main;Checkpoint;" +
		strings.Repeat("x", replayBlock+100) + "\n" + strings.Repeat("SPAN;null\nE;3000;main;Checkpoint;short\n", 30000)
	for _, in := range []Input{
		BytesInput("long.txt", []byte(long)),
		BytesInput("n1.jfr", rec),
		BytesInput("cut.jfr", rec[:len(rec)*9/10]),
		BytesInput("n3.txt", log),
		exampleInputs(t, "ex5")[1],
		logInput("events.txt", "0=1700000000000",
			"SPAN;null;1:1", "E;1000;main;ODStarted;1:1",
			"SPAN;1:1", "E;2000;rx;Incoming", "E;3000;rx;Handling;1:9",
			"SPAN;1:1", "E;2500;rx;Incoming", "E;3500;rx;Handling;1:1",
			"NC;null", "E;3600;timer;Checkpoint;tick", "E;4000;timer;ODStarted;1:1"),
	} {
		t.Run(in.Name, func(t *testing.T) {
			src, err := openSource(in, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			l, err := newSpanLog(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer l.remove()
			m := logMerger()
			read, endErr := logSpans(t, m, src, l)
			want := wantMerged(t, m, read)
			rs, err := newReplaySource(l, endErr, m, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, gotErr := replayAll(rs)
			if gotErr != endErr {
				t.Errorf("replay ended with %v, want %v", gotErr, endErr)
			}
			if len(got) != len(want) || len(want) == 0 {
				t.Fatalf("%d spans replayed, %d read", len(got), len(want))
			}
			for i := range want {
				if !sameMerged(&got[i], &want[i]) {
					t.Fatalf("span %d replayed as\n%+v\nread as\n%+v", i, got[i], want[i])
				}
			}
		})
	}
}

// TestSpanLogsRemoved: Merge leaves no file in its temporary directory,
// whether it succeeds or refuses its inputs.
func TestSpanLogsRemoved(t *testing.T) {
	ins := exampleInputs(t, "ex5")
	for _, tc := range []struct {
		name string
		ins  []Input
		fail bool
	}{
		{"merged", ins, false},
		{"refused", append(ins[:2:2], BytesInput("empty.txt", []byte("1=1\n"))), true},
	} {
		dir := t.TempDir()
		_, err := Merge(tc.ins, &Options{TempDir: dir}, func(*Trace) error {
			return nil
		})
		if (err != nil) != tc.fail {
			t.Errorf("%s: error %v", tc.name, err)
		}
		left, rerr := os.ReadDir(dir)
		if rerr != nil || len(left) != 0 {
			t.Errorf("%s: %v left in the temporary directory (%v)", tc.name, left, rerr)
		}
	}
	if _, err := Merge(ins, &Options{TempDir: "/nonexistent/dir"}, func(*Trace) error { return nil }); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("merge with a missing temporary directory: %v", err)
	}
}

// TestOpenSpans checks the held-span index against a map through
// growth, window slides that leave spans behind and removals.
func TestOpenSpans(t *testing.T) {
	var o openSpans
	want := map[int64]*jfrSpan{}
	add := func(num int64) {
		js := &jfrSpan{num: num}
		o.put(js)
		want[num] = js
	}
	add(5) // a span that stays open for the whole run
	for num := int64(10); num < 3*openRingMax; num++ {
		add(num)
		if old := num - 3000; old >= 10 && old%7 != 0 {
			o.remove(want[old])
			delete(want, old)
		}
	}
	add(7) // a number below the window
	for num, js := range want {
		if o.get(num) != js {
			t.Fatalf("span %d not found", num)
		}
	}
	for _, num := range []int64{6, 11, 3*openRingMax + 5} {
		if o.get(num) != nil {
			t.Errorf("span %d found, never held", num)
		}
	}
	n := 0
	o.each(func(*jfrSpan) { n++ })
	if n != len(want) {
		t.Errorf("each visits %d spans, %d held", n, len(want))
	}
}

// TestSpanLogDamaged: a span log cut short on disk ends its replay with an
// error, not a panic nor a short input taken as whole; so does one whose
// key is past the ID table.
func TestSpanLogDamaged(t *testing.T) {
	src, err := openSource(exampleInputs(t, "edge_hang")[1], t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l, err := newSpanLog(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer l.remove()
	l.input = "n1.jfr"
	m := logMerger()
	want, endErr := logSpans(t, m, src, l)
	st, err := l.f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.f.Truncate(st.Size() - 3); err != nil {
		t.Fatal(err)
	}
	rs, err := newReplaySource(l, endErr, m, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := replayAll(rs)
	if !errors.Is(err, errBadSpanLog) || len(got) != len(want)-1 {
		t.Errorf("replay of a cut log: %d of %d spans, error %v", len(got), len(want), err)
	}
	// The error names the input and the cut span's offset in the log.
	var off int64
	if err == nil || !strings.HasPrefix(err.Error(), "n1.jfr: temporary span log, byte offset ") {
		t.Errorf("replay of a cut log: error %v names no input and offset", err)
	} else if _, serr := fmt.Sscanf(strings.TrimPrefix(err.Error(), "n1.jfr: temporary span log, byte offset "), "%d:", &off); serr != nil || off <= 0 || off >= st.Size()-3 {
		t.Errorf("replay of a cut log: error %v: offset %d not within the %d bytes left (%d spans)", err, off, st.Size()-3, len(want))
	}
	// A span (flags: ordinal 0; wall delta 0) whose one key is the
	// table's length, then no events.
	b := []byte{8, 0, 1}
	b = binary.AppendVarint(b, int64(m.ids.Len()))
	b = append(b, 0)
	rs = &replaySource{m: m, clockAt: -1, texts: map[string]string{}}
	if _, err := rs.read(&spanBatch{}, b); !errors.Is(err, errBadSpanLog) {
		t.Errorf("a key past the table: %v, want %v", err, errBadSpanLog)
	}
	// Spans (no ordinal, wall delta 0, no keys) whose counts or
	// references do not hold: each is a corrupt log and leaves the batch
	// as it was, while the same span with the value in range reads.
	nids := uint64(m.ids.Len())
	for _, tc := range []struct {
		name      string
		bad, good []byte
	}{
		// Non-causal, 1 event, 2 kept (1 kept at position 0, kind 1,
		// thread, times, message and text 0).
		{"more events kept than the span has", []byte{9, 0, 0, 1, 2}, []byte{9, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0}},
		// Non-causal, 1 event, 1 kept at position 1 (0).
		{"an event past the span's count", []byte{9, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0}, []byte{9, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0, 0}},
		// 1 event whose message is past the keys and the table (the
		// table's last).
		{"a message past the table", append(binary.AppendUvarint([]byte{8, 0, 0, 1, 1, 0, 0, 0}, nids+1), 0),
			append(binary.AppendUvarint([]byte{8, 0, 0, 1, 1, 0, 0, 0}, nids), 0)},
	} {
		var batch spanBatch
		rs := &replaySource{m: m, clockAt: -1, texts: map[string]string{}}
		if _, err := rs.read(&batch, tc.bad); !errors.Is(err, errBadSpanLog) {
			t.Errorf("%s: %v, want %v", tc.name, err, errBadSpanLog)
		}
		if len(batch.merged) != 0 || len(batch.evs) != 0 || len(batch.keys) != 0 {
			t.Errorf("%s: the batch has %d spans, %d events, %d keys", tc.name, len(batch.merged), len(batch.evs), len(batch.keys))
		}
		if n, err := rs.read(&batch, tc.good); err != nil || n != len(tc.good) || len(batch.merged) != 1 || len(batch.evs) != 1 {
			t.Errorf("%s, in range: %d of %d bytes, %d spans, %d events, error %v", tc.name, n, len(tc.good), len(batch.merged), len(batch.evs), err)
		}
	}
}

// BenchmarkSpanLogRoundTrip writes one node's spans (node 1 of the
// generated cluster, -flow.requests requests; read and their IDs interned
// before the timer starts) to a span log with their keys, as pass 1's
// merge does, and replays them into merge spans in batches, as pass 2's
// read-ahead does: the work between the passes. With GOMAXPROCS=1 its
// time is that work's CPU.
//
//	GOMAXPROCS=1 go test ./analysis/flow -run '^$' -bench SpanLogRoundTrip -flow.requests 100000
func BenchmarkSpanLogRoundTrip(b *testing.B) {
	data, dir := genNodeRecording(b)
	m := logMerger()
	src := newJFRSource("n1.jfr", bytes.NewReader(data), io.NopCloser(nil), dir)
	spans, keys, msgs, err := keyedSpans(b, m, src)
	if !errors.Is(err, io.EOF) {
		b.Fatal(err)
	}
	src.Close()
	var events int64
	batch := &spanBatch{}
	b.ResetTimer()
	for range b.N {
		l, err := newSpanLog(dir)
		if err != nil {
			b.Fatal(err)
		}
		for i := range spans {
			l.add(&spans[i], keys[i], msgs[i])
		}
		if err := l.finish(); err != nil {
			b.Fatal(err)
		}
		rs, err := newReplaySource(l, nil, m, 0)
		if err != nil {
			b.Fatal(err)
		}
		for err == nil {
			batch.reset()
			for batch.len() < readAheadSpans && err == nil {
				err = rs.nextInto(batch)
			}
			for i := range batch.merged {
				events += int64(batch.merged[i].nevents)
			}
		}
		if !errors.Is(err, io.EOF) {
			b.Fatal(err)
		}
		l.remove()
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
