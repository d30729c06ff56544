package jfr

import (
	"bytes"
	"errors"
	"testing"
)

// TestLiveChunkDispatchFlush: DispatchFlush reads a flush's events from a
// buffer of the flush's bytes only, while the data Extend gets has the
// chunk's events overwritten (as a stream's chunk buffer, which gets the
// metadata and checkpoints only): the handlers get every event once, with
// the values, offsets and raw bytes of a reader of the whole chunk, the
// constants of earlier flushes (whose buffer is overwritten after each
// dispatch) resolved. A corrupt record's error names its offset in the
// chunk, as Dispatch's does, and a range outside the flush is an error.
func TestLiveChunkDispatchFlush(t *testing.T) {
	const n = 5
	data, headers := liveFlushes(t, n)
	want := wholeChunkEvents(t, data[n-1], headers[n-1])
	raws := make([][]byte, len(want))
	for i, ev := range want {
		raws[i] = bytes.Clone(ev.Raw())
	}
	// One handler of the type takes its rows (EachEvent); with a
	// second, Dispatch calls both for each event.
	for _, handlers := range []int{1, 2} {
		dispatchByFlush(t, data, headers, want, raws, handlers)
	}
	checkDispatchFlushErrors(t, data, headers, want)
}

// dispatchByFlush dispatches liveFlushes' chunk as a stream reading by
// flush does, to handlers handlers of go.AllKinds, and checks the events.
func dispatchByFlush(t *testing.T, data, headers [][]byte, want []*Event, raws [][]byte, handlers int) {
	n := len(data)
	live := NewLiveChunk(nil)
	live.Start(2, 500)
	var h EventHandlers
	got, flush := 0, 0
	d := valueDiff{resolve: true}
	var buf []byte // the flush's bytes, reused
	handle := func(ev *Event) {
		if got >= len(want) {
			t.Fatalf("flush %d: more events than the whole chunk has", flush)
		}
		if ev.Offset != want[got].Offset+500 || ev.Size != want[got].Size {
			t.Errorf("flush %d, event %d: offset %d, size %d; want %d, %d", flush, got, ev.Offset, ev.Size, want[got].Offset+500, want[got].Size)
		}
		if !bytes.Equal(ev.Raw(), raws[got]) {
			t.Errorf("flush %d, event %d: raw bytes differ from the whole chunk's", flush, got)
		}
		for j, v := range ev.Values() {
			if s := d.diff(ev.Type.Fields[j].Name, want[got].Fields[j], v); s != "" {
				t.Errorf("flush %d, event %d: %s", flush, got, s)
			}
		}
		checkFlushEndpoint(t, flush, ev)
		got++
	}
	var ev Event
	base := int64(0)
	for ; flush < n; flush++ {
		end := int64(len(data[flush]))
		chunk := bytes.Clone(data[flush])
		for _, w := range want {
			if w.Offset+w.Size <= end {
				copy(chunk[w.Offset:w.Offset+w.Size], bytes.Repeat([]byte{0xff}, int(w.Size)))
			}
		}
		c, err := live.Extend(headers[flush], chunk)
		must(t, err)
		if flush == 0 {
			fns := []func(*Event){handle, func(*Event) {}}
			h.Set(class(t, c.Metadata, "go.AllKinds").ID, fns[:handlers])
		}
		buf = append(buf[:0], data[flush][base:]...)
		must(t, live.DispatchFlush(base, buf, max(base, HeaderSize), end, &h, &ev))
		clear(buf)
		for i := range buf {
			buf[i] = 0xee
		}
		base = end
	}
	if got != len(want) {
		t.Errorf("%d handlers: handled %d events flush by flush, the whole chunk has %d", handlers, got, len(want))
	}
}

// checkDispatchFlushErrors: DispatchFlush's errors name the chunk's
// offsets, as Dispatch's.
func checkDispatchFlushErrors(t *testing.T, data, headers [][]byte, want []*Event) {
	n := len(data)
	var ev Event
	// A record's size byte made too large: the same error as Dispatch's.
	last := want[len(want)-1]
	if last.Offset < int64(len(data[n-2])) {
		t.Fatalf("the last event (at %d) is not in the last flush", last.Offset)
	}
	// errOf dispatches bad, the last flush's chunk, to a handler of
	// go.AllKinds that decodes each event, and returns the error met.
	errOf := func(bad []byte, dispatch func(*LiveChunk, *EventHandlers) error) error {
		live := NewLiveChunk(nil)
		live.Start(2, 500)
		c, err := live.Extend(headers[n-1], bad)
		must(t, err)
		var h EventHandlers
		var decodeErr error
		h.Set(class(t, c.Metadata, "go.AllKinds").ID, []func(*Event){func(ev *Event) {
			if ev.Values(); ev.Err() != nil && decodeErr == nil {
				decodeErr = ev.Err()
			}
		}})
		if err := dispatch(live, &h); err != nil {
			return err
		}
		return decodeErr
	}
	from := int64(len(data[n-2]))
	// sameErr tells whether Dispatch and DispatchFlush of bad meet the
	// same FormatError, and returns its offset and the two errors.
	sameErr := func(bad []byte) (off int64, same bool, whole, part error) {
		whole = errOf(bad, func(l *LiveChunk, h *EventHandlers) error { return l.Dispatch(from, int64(len(bad)), h, &ev) })
		part = errOf(bad, func(l *LiveChunk, h *EventHandlers) error {
			return l.DispatchFlush(from, bytes.Clone(bad[from:]), from, int64(len(bad)), h, &ev)
		})
		var fw, fp *FormatError
		same = errors.As(whole, &fw) && errors.As(part, &fp) && fw.Offset == fp.Offset
		if same {
			off = fw.Offset
		}
		return off, same, whole, part
	}
	bad := bytes.Clone(data[n-1])
	bad[last.Offset] = 0x7f
	if off, same, whole, part := sameErr(bad); !same || off != 500+last.Offset {
		t.Errorf("corrupt record at %d: Dispatch: %v; DispatchFlush: %v; want the same FormatError at %d", last.Offset, whole, part, 500+last.Offset)
	}
	// A field that runs past its record (the last byte a varint's
	// continuation), found when a handler decodes it: the same error.
	field := bytes.Clone(data[n-1])
	field[last.Offset+last.Size-1] = 0x80
	if off, same, whole, part := sameErr(field); !same || off < 500+last.Offset || off > 500+last.Offset+last.Size {
		t.Errorf("field past the end of the record at %d: Dispatch: %v; DispatchFlush: %v; want the same FormatError in the record", last.Offset, whole, part)
	}
	for _, r := range [][2]int64{{from - 1, int64(len(bad))}, {from, int64(len(bad)) + 1}, {from + 1, from}} {
		err := errOf(bad, func(l *LiveChunk, h *EventHandlers) error {
			return l.DispatchFlush(from, bad[from:], r[0], r[1], h, &ev)
		})
		var fp *FormatError
		if !errors.As(err, &fp) {
			t.Errorf("DispatchFlush(%d, %d) of the flush from %d to %d: %v, want a FormatError", r[0], r[1], from, len(bad), err)
		}
	}
}
