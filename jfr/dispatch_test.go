package jfr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/internal/spec"
)

// TestLiveChunkDispatch hands a chunk's events to handlers flush by flush:
// every event once, in order, with the values a reader of the whole chunk
// gets (constants resolved at the flush that adds them, without the caller
// loading them), each handler of a type in turn, the fields decoded only
// when asked for (the one Event is prepared afresh for every record).
func TestLiveChunkDispatch(t *testing.T) {
	const n = 5
	data, headers := liveFlushes(t, n)
	want := wholeChunkEvents(t, data[n-1], headers[n-1])

	live := NewLiveChunk(nil)
	live.Start(0, 0)
	var h EventHandlers
	got, flush := 0, 0
	d := valueDiff{resolve: true}
	first := func(ev *Event) {
		if ev.Fields != nil {
			t.Fatalf("event %d: fields decoded before a handler asked for them", got)
		}
		if got >= len(want) {
			t.Fatalf("flush %d: more events than the whole chunk has", flush)
		}
		for j, v := range ev.Values() {
			if s := d.diff(ev.Type.Fields[j].Name, want[got].Fields[j], v); s != "" {
				t.Errorf("flush %d, event %d: %s", flush, got, s)
			}
		}
		checkFlushEndpoint(t, flush, ev)
	}
	second := func(ev *Event) {
		if ev.Fields == nil || ev.Offset != want[got].Offset {
			t.Errorf("event %d: the second handler got offset %d, fields %v; want those the first saw", got, ev.Offset, ev.Fields != nil)
		}
		got++
	}
	var ev Event
	from := int64(HeaderSize)
	for ; flush < n; flush++ {
		c, err := live.Extend(headers[flush], data[flush])
		must(t, err)
		if flush == 0 {
			// Another type, by a large id, to none of whose events
			// handlers are called.
			h.Set(1<<40, []func(*Event){func(*Event) { t.Error("a handler of a type with no events was called") }})
			h.Set(class(t, c.Metadata, "go.AllKinds").ID, []func(*Event){first, second})
		}
		must(t, live.Dispatch(from, int64(len(data[flush])), &h, &ev))
		from = int64(len(data[flush]))
	}
	if got != len(want) {
		t.Errorf("handled %d events flush by flush, the whole chunk has %d", got, len(want))
	}
}

// TestLiveChunkDispatchBadRecords: a flush with any byte of its records
// changed gives handlers what they can be given and a FormatError in the
// chunk, never a panic; so does a range outside the data.
func TestLiveChunkDispatchBadRecords(t *testing.T) {
	data, headers := liveFlushes(t, 2)
	from := int64(len(data[0]))
	check := func(what string, err error) {
		t.Helper()
		var fe *FormatError
		if err != nil && (!errors.As(err, &fe) || fe.Chunk != 3 || fe.Offset < 1000) {
			t.Fatalf("%s: %v, want nil or a FormatError in chunk 3 at offset >= 1000", what, err)
		}
	}
	var ev Event
	for pos := from; pos < int64(len(data[1])); pos++ {
		for _, b := range []byte{0, 1, 2, 0x7f, 0x80, 0xff} {
			bad := bytes.Clone(data[1])
			bad[pos] = b
			live := NewLiveChunk(nil)
			live.Start(3, 1000)
			c, err := live.Extend(headers[1], bad)
			if err != nil {
				check(fmt.Sprintf("byte %d set to %#x: Extend", pos, b), err)
				continue
			}
			var h EventHandlers
			for _, cl := range c.Metadata.EventTypes() {
				h.Set(cl.ID, []func(*Event){func(ev *Event) { ev.Values() }})
			}
			check(fmt.Sprintf("byte %d set to %#x", pos, b), live.Dispatch(from, int64(len(bad)), &h, &ev))
		}
	}
	live := NewLiveChunk(nil)
	live.Start(3, 1000)
	_, err := live.Extend(headers[1], data[1])
	must(t, err)
	var h EventHandlers
	h.Set(2, []func(*Event){func(*Event) {}})
	for _, r := range [][2]int64{{0, 10}, {from, int64(len(data[1])) + 1}, {from + 1, from}} {
		err := live.Dispatch(r[0], r[1], &h, &ev)
		if err == nil {
			t.Errorf("Dispatch(%d, %d) of %d bytes: no error", r[0], r[1], len(data[1]))
		}
		check(fmt.Sprintf("Dispatch(%d, %d)", r[0], r[1]), err)
	}
}

// TestLiveChunkDispatchRuns: events of a type with one handler in a row
// (as the recorder writes them) are handed over one by one, each with its
// own offset and values, whatever ends the row: a record of another type,
// one whose size takes two bytes (a long event, even one whose second size
// byte is the type id, or a padded size as a recorder's buffers have), or
// the end of a flush.
func TestLiveChunkDispatchRuns(t *testing.T) {
	md, flushes, headers := dispatchRunsChunk(t)
	a, bb := class(t, md, "go.A"), class(t, md, "go.B")
	n := 24 // events written
	want := runsChunkWant(t, flushes, headers)
	if len(want) != n {
		t.Fatalf("the whole chunk has %d events, %d written", len(want), n)
	}
	var handled []runsEvent
	handler := func(ev *Event) { handled = append(handled, runsEventOf(ev)) }
	var h EventHandlers
	h.Set(a.ID, []func(*Event){handler})
	h.Set(bb.ID, []func(*Event){handler})
	dispatchFlushes(t, flushes, headers, &h)
	compareRunsEvents(t, handled, want)
}

// runsEvent is what the tests of dispatchRunsChunk compare of an event.
type runsEvent struct {
	typ    string
	n      int64
	s      string
	offset int64
}

// runsEventOf reads ev's fields as a handler does.
func runsEventOf(ev *Event) runsEvent {
	nv, _ := ev.Field("n")
	sv, _ := ev.Field("s")
	return runsEvent{ev.Type.Name, nv.Int(), sv.String(), ev.Offset}
}

// runsChunkWant returns the events of dispatchRunsChunk's chunk, read
// whole.
func runsChunkWant(t *testing.T, flushes, headers [][]byte) []runsEvent {
	var want []runsEvent
	for _, ev := range wholeChunkEvents(t, flushes[1], headers[1]) {
		want = append(want, runsEvent{ev.Type.Name, ev.Fields[1].Int(), ev.Fields[2].String(), ev.Offset})
	}
	return want
}

// dispatchFlushes hands h the events of each flush as a stream does.
func dispatchFlushes(t *testing.T, flushes, headers [][]byte, h *EventHandlers) {
	t.Helper()
	live := NewLiveChunk(nil)
	live.Start(0, 0)
	var ev Event
	from := int64(HeaderSize)
	for i, data := range flushes {
		_, err := live.Extend(headers[i], data)
		must(t, err)
		must(t, live.Dispatch(from, int64(len(data)), h, &ev))
		from = int64(len(data))
	}
}

func compareRunsEvents(t *testing.T, handled, want []runsEvent) {
	t.Helper()
	if len(handled) != len(want) {
		t.Fatalf("%d events handled, want %d", len(handled), len(want))
	}
	for i := range want {
		if handled[i] != want[i] {
			t.Errorf("event %d: %+v, want %+v", i, handled[i], want[i])
		}
	}
}

// TestLiveChunkDispatchBatches: a batch handler gets the events of its
// type in rows, records of the type end to end whatever their headers,
// each row ended by a record of another type or the end of a flush: the
// events an event handler gets, in order, with the same values. A second
// batch handler of the type gets each row again; the events of a row it
// does not take are skipped, not handed over again.
func TestLiveChunkDispatchBatches(t *testing.T) {
	md, flushes, headers := dispatchRunsChunk(t)
	a, bb := class(t, md, "go.A"), class(t, md, "go.B")
	want := runsChunkWant(t, flushes, headers)
	var handled []runsEvent
	var rows []string
	var rowsOfA []int64 // the offsets of their first events
	all := func(b *EventBatch) {
		n := 0
		for ev := range b.Events() {
			if n == 0 && ev.Type.Name == "go.A" {
				rowsOfA = append(rowsOfA, ev.Offset)
			}
			if ev.Fields != nil {
				t.Fatalf("event %d: fields decoded before a handler asked for them", len(handled))
			}
			if ev.Type != b.Type() {
				t.Fatalf("event %d: type %s in a batch of %s", len(handled), ev.Type.Name, b.Type().Name)
			}
			handled = append(handled, runsEventOf(ev))
			n++
		}
		rows = append(rows, fmt.Sprintf("%s %d", b.Type().Name, n))
		for range b.Events() {
			t.Error("Events after the end of a row: an event")
		}
	}
	var firsts []int64
	first := func(b *EventBatch) {
		n := 0
		for ev := range b.Events() {
			firsts = append(firsts, ev.Offset)
			n++
			break
		}
		if n == 0 {
			t.Fatal("a batch without an event")
		}
	}
	var h EventHandlers
	h.SetBatch(a.ID, []func(*EventBatch){all, first})
	h.SetBatch(bb.ID, []func(*EventBatch){all})
	dispatchFlushes(t, flushes, headers, &h)
	compareRunsEvents(t, handled, want)
	// The rows the chunk was written in (dispatchRunsChunk), the first
	// flush's second row of go.A of records with headers of each kind.
	wantRows := []string{"go.A 5", "go.B 2", "go.A 10", "go.A 2", "go.B 3", "go.A 2"}
	if fmt.Sprint(rows) != fmt.Sprint(wantRows) {
		t.Errorf("rows %q, want %q", rows, wantRows)
	}
	if fmt.Sprint(firsts) != fmt.Sprint(rowsOfA) {
		t.Errorf("the second handler of go.A got the events at %v, want the first of each row, %v", firsts, rowsOfA)
	}
	var zero EventBatch
	for range zero.Events() {
		t.Error("the zero EventBatch's Events: an event")
	}
	if zero.Type() != nil {
		t.Error("the zero EventBatch's Type: not nil")
	}
}

// dispatchRunsChunk writes a chunk of go.A and go.B events (fields n, a
// count from 1, and s) in two flushes, rows of go.A ended by each kind of
// record a row can end at, and returns its metadata and the chunk's bytes
// and header after each flush.
func dispatchRunsChunk(t testing.TB) (md *Metadata, flushes, headers [][]byte) {
	t.Helper()
	b := NewMetadataBuilder()
	for _, name := range []string{"go.A", "go.B"} {
		if _, err := b.AddEvent(EventType{Name: name, Fields: []FieldType{{Name: "n", Type: spec.Long}, {Name: "s", Type: spec.String}}}); err != nil {
			t.Fatal(err)
		}
	}
	md, err := b.Build()
	must(t, err)
	a, bb := class(t, md, "go.A"), class(t, md, "go.B")
	if len(a.Fields) != 3 || a.Fields[0].Name != "startTime" || a.ID >= 0x80 || bb.ID >= 0x80 {
		t.Fatalf("go.A has %d fields, id %d, go.B id %d: want startTime, n, s and one-byte ids", len(a.Fields), a.ID, bb.ID)
	}
	buf := new(bytes.Buffer)
	w := NewWriter(buf, &WriterOptions{StartNanos: testStartNanos, StartTicks: testStartTicks})
	must(t, w.SetMetadata(md))
	n := int64(0)
	record := func(cl *Class, s string, padded bool) []byte {
		n++
		payload := AppendString(leb128.AppendUvarint(leb128.AppendUvarint(nil, testStartTicks+uint64(n)), uint64(n)), s)
		rec := AppendRecord(nil, cl.ID, payload)
		if padded {
			// The size in two bytes, as a recorder reserves it.
			rec = append([]byte{byte(len(rec)+1) | 0x80, 0}, rec[1:]...)
		}
		return rec
	}
	write := func(cl *Class, count int, s string, padded bool) {
		for range count {
			must(t, w.WriteRecords(record(cl, s, padded)))
		}
	}
	// A size of two bytes whose second is the type id: read as a size of
	// one byte, the record would seem one of the row.
	long := ""
	for k := 0; ; {
		k += 128*int(a.ID) + 5 - len(record(a, strings.Repeat("x", k), false))
		if long = strings.Repeat("x", k); len(record(a, long, false)) == 128*int(a.ID)+5 {
			break
		}
	}
	n = 0
	flush := func() {
		flushes = append(flushes, append([]byte(nil), buf.Bytes()...))
		headers = append(headers, append([]byte(nil), w.Header()...))
	}
	write(a, 5, "a", false)
	write(bb, 2, "b", false)
	write(a, 3, "a", false)
	write(a, 1, long, false)
	write(a, 2, "a", false)
	write(a, 1, "p", true)
	write(a, 3, "a", false)
	must(t, w.Flushpoint(testStartTicks+1000))
	flush()
	write(a, 2, "a", false)
	write(bb, 1, long, false)
	write(bb, 2, "b", true)
	write(a, 2, "a", false)
	must(t, w.EndChunk(testStartTicks+2000))
	flush()
	if n != 24 {
		t.Fatalf("%d events written, want 24", n)
	}
	return md, flushes, headers
}

// FuzzLiveChunkDispatch checks that no bytes a flush may add to a live
// chunk make Dispatch panic or hang, handlers on every type decoding each
// event: every error is a *FormatError at an offset in the flush.
func FuzzLiveChunkDispatch(f *testing.F) {
	_, flushes, headers := dispatchRunsChunk(f)
	base, header := flushes[0], headers[0]
	added := flushes[1][len(base):]
	f.Add(added)
	f.Add([]byte{})
	for _, n := range []int{1, 2, 5, len(added) / 2} {
		f.Add(added[:n])
		b := bytes.Clone(added)
		b[n] ^= 0x80
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, recs []byte) {
		data := append(bytes.Clone(base), recs...)
		h := bytes.Clone(header)
		binary.BigEndian.PutUint64(h[8:], uint64(len(data)))
		live := NewLiveChunk(nil)
		live.Start(2, 1000)
		c, err := live.Extend(h, data)
		must(t, err)
		// Event handlers, two a type so that each record is prepared on
		// its own (one handler is called in a row's loop, as a batch
		// handler), then batch handlers (one that takes every event, one
		// that takes the first of a row): the same events, the same error.
		var each, batches EventHandlers
		var got [2][]int64
		for _, cl := range c.Metadata.EventTypes() {
			each.Set(cl.ID, []func(*Event){func(ev *Event) { ev.Values(); got[0] = append(got[0], ev.Offset) }, func(*Event) {}})
			batches.SetBatch(cl.ID, []func(*EventBatch){func(b *EventBatch) {
				for ev := range b.Events() {
					ev.Values()
					got[1] = append(got[1], ev.Offset)
				}
			}, func(b *EventBatch) {
				for range b.Events() {
					break
				}
			}})
		}
		var errs [2]error
		for i, h := range []*EventHandlers{&each, &batches} {
			var ev Event
			err := live.Dispatch(int64(len(base)), int64(len(data)), h, &ev)
			var fe *FormatError
			if err != nil && (!errors.As(err, &fe) || fe.Chunk != 2 || fe.Offset < 1000+int64(len(base)) || fe.Offset > 1000+int64(len(data))) {
				t.Fatalf("%v: want nil or a FormatError in chunk 2 within the flush, at %d to %d", err, 1000+len(base), 1000+len(data))
			}
			errs[i] = err
		}
		if fmt.Sprint(errs[0]) != fmt.Sprint(errs[1]) || fmt.Sprint(got[0]) != fmt.Sprint(got[1]) {
			t.Fatalf("event handlers got the events at %v and %v, batch handlers at %v and %v", got[0], errs[0], got[1], errs[1])
		}
	})
}
