package jfr

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/internal/spec"
)

// TestEventBatchHeaderGuess checks the batch loop's tier 1, which takes a
// record on its header's two bytes alone when they are those of the
// record before (EventBatch.Events): a batch handler gets the events a
// reader of the whole chunk gets, with their offsets and sizes, through
// rows of records of one size, a size that changes, a record whose size
// takes two bytes, a record of another type with the same size byte (the
// row ends there), a flush that ends in a row, and records of sizes in
// random order; tier 1 takes the rows of one size (tier 2 took only the
// records of a new header) and is turned off in the row of random sizes.
func TestEventBatchHeaderGuess(t *testing.T) {
	g := newGuessChunk(t)
	g.write(g.a, 40, "aa", false)
	g.write(g.a, 80, "aaa", false)
	g.write(g.a, 1, "aaa", true)
	g.write(g.a, 40, "aaa", false)
	g.write(g.b, 1, "aaa", false) // the row's size byte, another type
	rng := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		g.write(g.a, 1, strings.Repeat("r", 1+rng.IntN(2)), false)
	}
	g.write(g.b, 1, "b", false)
	g.write(g.a, 20, "aa", false)
	data, header := g.end()
	want := guessWant(t, data, header)
	split := want[100].offset // a flush ends in the middle of the row

	var handled []guessEvent
	type rowEnd struct {
		taken int  // records tier 2 took
		off   bool // tier 1 turned off
	}
	var rows []rowEnd
	var h EventHandlers
	h.SetBatch(g.a.ID, []func(*EventBatch){func(b *EventBatch) {
		for ev := range b.Events() {
			handled = append(handled, guessEventOf(ev))
		}
		rows = append(rows, rowEnd{int(b.like >> 32), b.like&(1<<17) != 0})
	}})
	h.Set(g.b.ID, []func(*Event){func(ev *Event) { handled = append(handled, guessEventOf(ev)) }})
	live := NewLiveChunk(nil)
	live.Start(0, 0)
	_, err := live.Extend(header, data)
	must(t, err)
	var ev Event
	must(t, live.Dispatch(HeaderSize, int64(split), &h, &ev))
	must(t, live.Dispatch(int64(split), int64(len(data)), &h, &ev))
	if len(handled) != len(want) {
		t.Fatalf("%d events handled, the whole chunk has %d", len(handled), len(want))
	}
	for i := range want {
		if handled[i] != want[i] {
			t.Fatalf("event %d: %+v, want %+v", i, handled[i], want[i])
		}
	}
	// The first row in two dispatches: two headers in the first, one in
	// the second, where tier 1 goes on after the record of a two-byte
	// size (read by nextRecord), whose header it leaves out.
	wantRows := []rowEnd{{2, false}, {1, false}, {0, true}, {1, false}}
	if len(rows) != len(wantRows) || rows[0] != wantRows[0] || rows[1] != wantRows[1] || !rows[2].off || rows[3] != wantRows[3] {
		t.Errorf("rows ended with %+v, want %+v (tier 2's count in the third any)", rows, wantRows)
	}
}

// TestEventBatchHeaderGuessError: a decoding error in a row that tier 1
// takes ends the row at the event whose field failed, as for event
// handlers (two of the type, each called on its own, or one, called from
// EachEvent's loop), and Dispatch returns it.
func TestEventBatchHeaderGuessError(t *testing.T) {
	g := newGuessChunk(t)
	g.write(g.a, 20, "aa", false)
	data, header := g.end()
	// The string's encoding byte of the 11th record (before its length
	// and two bytes), made one no string has: the record keeps its size.
	bad := guessWant(t, data, header)[10]
	data[bad.offset+bad.size-4] = 0x7f
	var got [3][]int64
	var errs [3]error
	each := func(i int) func(ev *Event) {
		return func(ev *Event) { ev.Values(); got[i] = append(got[i], ev.Offset) }
	}
	for i, set := range []func(*EventHandlers){
		func(h *EventHandlers) { h.Set(g.a.ID, []func(*Event){each(0), func(*Event) {}}) },
		func(h *EventHandlers) { h.Set(g.a.ID, []func(*Event){each(1)}) },
		func(h *EventHandlers) {
			h.SetBatch(g.a.ID, []func(*EventBatch){func(b *EventBatch) {
				for ev := range b.Events() {
					ev.Values()
					got[2] = append(got[2], ev.Offset)
				}
			}})
		},
	} {
		var h EventHandlers
		set(&h)
		live := NewLiveChunk(nil)
		live.Start(0, 0)
		_, err := live.Extend(header, data)
		must(t, err)
		var ev Event
		errs[i] = live.Dispatch(HeaderSize, int64(len(data)), &h, &ev)
	}
	if errs[2] == nil || len(got[2]) != 11 {
		t.Fatalf("batch handler: %d events, error %v; want 11 and a decoding error", len(got[2]), errs[2])
	}
	for i := range 2 {
		if fmt.Sprint(got[i], errs[i]) != fmt.Sprint(got[2], errs[2]) {
			t.Errorf("event handlers (%d of the type) got the events at %v and %v, the batch handler at %v and %v", 2-i, got[i], errs[i], got[2], errs[2])
		}
	}
}

// guessChunk writes a chunk of go.A and go.B events (fields n, a count
// from 1, and s) in one flush.
type guessChunk struct {
	t    *testing.T
	a, b *Class
	buf  *bytes.Buffer
	w    *Writer
	n    int64
}

func newGuessChunk(t *testing.T) *guessChunk {
	mb := NewMetadataBuilder()
	for _, name := range []string{"go.A", "go.B"} {
		if _, err := mb.AddEvent(EventType{Name: name, Fields: []FieldType{{Name: "n", Type: spec.Long}, {Name: "s", Type: spec.String}}}); err != nil {
			t.Fatal(err)
		}
	}
	md, err := mb.Build()
	must(t, err)
	g := &guessChunk{t: t, a: class(t, md, "go.A"), b: class(t, md, "go.B"), buf: new(bytes.Buffer)}
	if g.a.ID >= 0x80 || g.b.ID >= 0x80 {
		t.Fatalf("go.A's id %d, go.B's %d: want one-byte ids", g.a.ID, g.b.ID)
	}
	g.w = NewWriter(g.buf, &WriterOptions{StartNanos: testStartNanos, StartTicks: testStartTicks})
	must(t, g.w.SetMetadata(md))
	return g
}

// record returns the next record of cl, of one-byte varints but for the
// size, in two bytes if padded (as a recorder reserves it).
func (g *guessChunk) record(cl *Class, s string, padded bool) []byte {
	payload := AppendString(leb128.AppendUvarint(leb128.AppendUvarint(nil, testStartTicks+1), uint64(g.n&0x7f)), s)
	rec := AppendRecord(nil, cl.ID, payload)
	if padded {
		rec = append([]byte{byte(len(rec)+1) | 0x80, 0}, rec[1:]...)
	}
	return rec
}

func (g *guessChunk) write(cl *Class, count int, s string, padded bool) {
	for range count {
		g.n++
		must(g.t, g.w.WriteRecords(g.record(cl, s, padded)))
	}
}

// end writes the flushpoint and returns the chunk's bytes and header.
func (g *guessChunk) end() (data, header []byte) {
	must(g.t, g.w.Flushpoint(testStartTicks+1000))
	return bytes.Clone(g.buf.Bytes()), bytes.Clone(g.w.Header())
}

// guessEvent is what TestEventBatchHeaderGuess compares of an event.
type guessEvent struct {
	typ          string
	n            int64
	s            string
	offset, size int64
}

func guessEventOf(ev *Event) guessEvent {
	nv, _ := ev.Field("n")
	sv, _ := ev.Field("s")
	return guessEvent{ev.Type.Name, nv.Int(), sv.String(), ev.Offset, ev.Size}
}

func guessWant(t *testing.T, data, header []byte) []guessEvent {
	var want []guessEvent
	for _, ev := range wholeChunkEvents(t, data, header) {
		want = append(want, guessEvent{ev.Type.Name, ev.Fields[1].Int(), ev.Fields[2].String(), ev.Offset, ev.Size})
	}
	return want
}
