package jfr

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
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
