package jfr

import "fmt"

// EventHandlers holds, by event type id, the functions LiveChunk.Dispatch
// hands the events of the type to. The zero value has none.
type EventHandlers struct {
	small [][]func(*Event) // by id, for ids below maxSmallHandlerID
	large map[int64][]func(*Event)
	any   bool
}

// maxSmallHandlerID bounds the ids EventHandlers keeps in a slice: a
// writer may number its types as it likes (the JDK's are in the hundreds,
// the recorder's from 2 up).
const maxSmallHandlerID = 1 << 12

// Reset removes all the handlers.
func (h *EventHandlers) Reset() {
	clear(h.small)
	clear(h.large)
	h.any = false
}

// Set makes fns the handlers of the events of type id, replacing those it
// had; the slice is kept, not copied.
func (h *EventHandlers) Set(id int64, fns []func(*Event)) {
	if id >= 0 && id < maxSmallHandlerID {
		if int(id) >= len(h.small) {
			h.small = append(h.small, make([][]func(*Event), int(id)+1-len(h.small))...)
		}
		h.small[id] = fns
	} else {
		if h.large == nil {
			h.large = map[int64][]func(*Event){}
		}
		h.large[id] = fns
	}
	h.any = h.any || len(fns) > 0
}

// Any tells whether Set gave some type handlers since the last Reset.
func (h *EventHandlers) Any() bool { return h.any }

func (h *EventHandlers) lookup(id int64) []func(*Event) {
	if uint64(id) < uint64(len(h.small)) {
		return h.small[id]
	}
	if h.large == nil {
		return nil
	}
	return h.large[id]
}

// Dispatch walks the chunk's records from byte offset from of the chunk up
// to offset to (at most the end of the data the last Extend was given)
// and calls the handlers of each event whose type has some, in the order
// of the records, the others skipped by their size. Before the first such
// event it loads the new constants (LoadConstants), so a flush without one
// decodes nothing.
//
// Every handler gets the same *Event, ev, prepared as DecodeEventLazy does
// (its fields decoded when a handler first asks for one): it is valid
// during the call only, and a handler that keeps an event must copy what
// it needs. This is what makes a dispatch cost a few nanoseconds an event:
// nothing is allocated or decoded for an event no handler looks into.
// Dispatch stops at the first error, a record it cannot walk or the
// decoding error a handler met (Event.Err).
func (l *LiveChunk) Dispatch(from, to int64, h *EventHandlers, ev *Event) error {
	c := l.c
	if !h.any || c == nil {
		return nil
	}
	if from < HeaderSize || from > to || to > int64(len(c.data)) {
		return c.errorAt(from, fmt.Errorf("records from %d to %d are not in the %d bytes of the chunk", from, to, len(c.data)))
	}
	data := c.data[:to]
	loaded := false
	lastID, cl, fns := int64(-1), (*Class)(nil), ([]func(*Event))(nil)
	for pos := from; pos < int64(len(data)); {
		// Walked in place, a record at a time: the common header (a
		// size and a type id of one byte each) is read here, any
		// other by recordHeader, which checks every bound.
		var size, typ int64
		if hdr := data[pos:]; len(hdr) >= 2 && hdr[0]|hdr[1] < 0x80 && hdr[0] >= 2 {
			size, typ = int64(hdr[0]), int64(hdr[1])
		} else {
			var err error
			if size, typ, _, err = recordHeader(data, pos); err != nil {
				return c.errorAt(pos, err)
			}
		}
		if size > int64(len(data))-pos {
			return c.errorAt(pos, fmt.Errorf("record size %d exceeds the %d bytes left in the flush", size, int64(len(data))-pos))
		}
		off := pos
		pos += size
		if typ != lastID {
			f := h.lookup(typ)
			if len(f) == 0 {
				continue
			}
			if cl = c.Metadata.Class(typ); cl == nil || typ < 2 {
				return c.errorAt(off, fmt.Errorf("record of type %d is not an event", typ))
			}
			lastID, fns = typ, f
			if !loaded {
				// The constants this flush's events refer to.
				if err := l.LoadConstants(); err != nil {
					return err
				}
				loaded = true
			}
		}
		if len(fns) == 1 && typ < 0x80 {
			var err error
			if pos, err = dispatchRun(c, data, int(off), int(size), byte(typ), cl, fns[0], ev); err != nil {
				return err
			}
			continue
		}
		ev.prepareLazy(c, cl, c.Offset+off, size)
		for _, fn := range fns {
			fn(ev)
		}
		if ev.err != nil {
			return ev.err
		}
	}
	return nil
}

// dispatchRun calls fn with the event of type cl in the record of data at
// off, of size bytes, and with each record that follows it of the same
// type (id, below 0x80) whose size and type id take a byte each, and
// returns the offset of the first record after them. A writer's events of
// one type often come in a row (the recorder's do, and its records of
// user types have one-byte headers), and a type with one handler is the
// common case: this loop keeps only what such a row needs across the
// handler call, which spills every live register, and reads the next
// record's header with its bounds checked once. Any other record is left
// to Dispatch's walk, which checks it. In BenchmarkStreamPerEvent (package
// recorder) this took the stream's work per event from about 11.7 to 7.8
// CPU ns.
func dispatchRun(c *Chunk, data []byte, off, size int, id byte, cl *Class, fn func(*Event), ev *Event) (int64, error) {
	for {
		ev.prepareLazy(c, cl, c.Offset+int64(off), int64(size))
		fn(ev)
		if ev.err != nil {
			return 0, ev.err
		}
		off += size
		next := data[off:]
		if len(next) < 2 || next[1] != id || next[0]-2 >= 0x80-2 || int(next[0]) > len(next) {
			// Not a record of the row with a one-byte size of at
			// least 2, the size and the type id.
			return int64(off), nil
		}
		size = int(next[0])
	}
}

// prepareLazy makes ev the event of type cl in the record of c at off, of
// size bytes, its fields to be decoded when first asked for. It writes
// only what changed: a dispatch prepares one Event for every record, and a
// pointer written to a heap object costs a write barrier check.
func (e *Event) prepareLazy(c *Chunk, cl *Class, off, size int64) {
	if e.Type != cl {
		e.Type = cl
	}
	if e.Chunk != c {
		e.Chunk = c
	}
	if e.Fields != nil {
		e.Fields = nil
	}
	if e.err != nil {
		e.err = nil
	}
	e.Offset, e.Size, e.pending = off, size, true
}
