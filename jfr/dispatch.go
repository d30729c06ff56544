package jfr

import (
	"fmt"
	"iter"
)

// EventHandlers holds, by event type id, the functions LiveChunk.Dispatch
// hands the events of the type to: each event to a function of *Event
// (Set), or each row of events of the type to a function of *EventBatch
// (SetBatch). The zero value has none.
type EventHandlers struct {
	small []typeHandlers // by id, for ids below maxSmallHandlerID
	large map[int64]typeHandlers
	any   bool
}

// typeHandlers are a type's handlers: of events or of batches, not both.
type typeHandlers struct {
	each  []func(*Event)
	batch []func(*EventBatch)
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
// had (batch handlers too); the slice is kept, not copied.
//
// A type with one handler, the common case, is dispatched as a batch
// handler that calls it in EventBatch.Events' loop: a writer's events of
// one type often lie in a row (the recorder's do), and that loop keeps
// only what the row needs across the handler's call, which spills every
// live register (BenchmarkStreamPerEvent, package recorder: the stream's
// work an event went from about 11.7 to 7.8 CPU ns so). Several handlers
// of a type are called one event at a time, each in turn.
func (h *EventHandlers) Set(id int64, fns []func(*Event)) {
	if len(fns) == 1 {
		h.set(id, typeHandlers{batch: []func(*EventBatch){EachEvent(fns[0])}})
		return
	}
	h.set(id, typeHandlers{each: fns})
}

// EachEvent returns a batch handler that calls fn with each event of the
// row, for a type whose handlers mix the two kinds (SetBatch).
func EachEvent(fn func(*Event)) func(*EventBatch) {
	return func(b *EventBatch) { b.each(fn) }
}

// each calls fn with each event of the row not yet taken, as a range loop
// over Events would, but without Events' tier 1: the call of fn for every
// event spills every live register, so the walk's chain of loads is not
// what limits the loop, and tier 1 would cost instructions reloading its
// state after each call (callgrind, BenchmarkStreamPerEvent/each in
// package recorder: 57 instructions an event so, 60.6 through Events).
func (b *EventBatch) each(fn func(*Event)) {
	d, p, e, off, id := b.data, uint(b.next), b.ev, b.offset, b.id
	for {
		if n := uint(len(d)); p < n && p+1 < n && int(d[p+1]) == id {
			size, next := uint(d[p]), p+uint(d[p])
			if size-2 < 0x80-2 && next <= n && e.err == nil {
				e.Offset, e.Size, e.pending = off+int64(p), int64(size), true
				if e.Fields != nil {
					e.Fields = nil
				}
				p = next
				fn(e)
				continue
			}
		}
		b.next = int(p)
		if !b.nextRecord() {
			return
		}
		p = uint(b.next)
		fn(e)
	}
}

// SetBatch makes fns the handlers of the events of type id, replacing
// those it had (event handlers too), each called with every row of
// events of the type in a flush (EventBatch); the slice is kept, not
// copied.
func (h *EventHandlers) SetBatch(id int64, fns []func(*EventBatch)) {
	h.set(id, typeHandlers{batch: fns})
}

func (h *EventHandlers) set(id int64, t typeHandlers) {
	if id >= 0 && id < maxSmallHandlerID {
		if int(id) >= len(h.small) {
			h.small = append(h.small, make([]typeHandlers, int(id)+1-len(h.small))...)
		}
		h.small[id] = t
	} else {
		if h.large == nil {
			h.large = map[int64]typeHandlers{}
		}
		h.large[id] = t
	}
	h.any = h.any || len(t.each) > 0 || len(t.batch) > 0
}

// Any tells whether Set gave some type handlers since the last Reset.
func (h *EventHandlers) Any() bool { return h.any }

func (h *EventHandlers) lookup(id int64) typeHandlers {
	if uint64(id) < uint64(len(h.small)) {
		return h.small[id]
	}
	if h.large == nil {
		return typeHandlers{}
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
// A batch handler (SetBatch) is called once for each row of events of its
// type, records of the type end to end, and takes them one by one in a
// range loop over EventBatch.Events, the same Event each time: this saves
// a call of a handler for every event. Events of the row the handler does not take
// are skipped; each batch handler of a type gets the whole row in turn.
// Dispatch stops at the first error, a record it cannot walk or the
// decoding error a handler met (Event.Err).
func (l *LiveChunk) Dispatch(from, to int64, h *EventHandlers, ev *Event) error {
	if l.c == nil {
		return nil
	}
	return l.dispatch(l.c, from, to, h, ev)
}

// DispatchFlush is Dispatch over the records of flush, the chunk's bytes
// from byte offset base of the chunk (such as what a flush added),
// rather than over the bytes the last Extend was given: from and to are
// offsets in the chunk, between base and base+len(flush). Extend (whose
// data need hold only the chunk's metadata and checkpoints, the records
// LoadConstants reads) and LoadConstants still read the chunk; the events
// are read from flush. So a reader that gets the chunk a flush at a time
// need not keep the events of past flushes, nor write those of the new
// one at their place in a buffer of the whole chunk.
//
// The events' Offsets, Sizes and errors are the chunk's, as Dispatch's.
// Their Chunk is a view of the chunk whose bytes are flush's only, valid
// during the call: it decodes (and Raw returns) the events of flush only.
func (l *LiveChunk) DispatchFlush(base int64, flush []byte, from, to int64, h *EventHandlers, ev *Event) error {
	if l.c == nil {
		return nil
	}
	if base < 0 {
		return l.c.errorAt(from, fmt.Errorf("a flush at offset %d", base))
	}
	l.view = *l.c
	l.view.data, l.view.base = flush, base
	return l.dispatch(&l.view, from, to, h, ev)
}

// dispatch is Dispatch over c, the chunk or a view of it (its data from
// c.base).
func (l *LiveChunk) dispatch(c *Chunk, from, to int64, h *EventHandlers, ev *Event) error {
	if !h.any {
		return nil
	}
	base := c.base
	if from < max(HeaderSize, base) || from > to || to > base+int64(len(c.data)) {
		return c.errorAt(from, fmt.Errorf("records from %d to %d are not in the %d bytes of the chunk", from, to, base+int64(len(c.data))))
	}
	// data and pos are offsets from base; the events' and errors' are
	// offsets in the chunk.
	data := c.data[:to-base]
	loaded := false
	lastID, cl, fns := int64(-1), (*Class)(nil), typeHandlers{}
	for pos := from - base; pos < int64(len(data)); {
		// Walked in place, a record at a time: the common header (a
		// size and a type id of one byte each) is read here, any
		// other by recordHeader, which checks every bound.
		var size, typ int64
		if hdr := data[pos:]; len(hdr) >= 2 && hdr[0]|hdr[1] < 0x80 && hdr[0] >= 2 {
			size, typ = int64(hdr[0]), int64(hdr[1])
		} else {
			var err error
			if size, typ, _, err = recordHeader(data, pos); err != nil {
				return c.errorAt(base+pos, err)
			}
		}
		if size > int64(len(data))-pos {
			return c.errorAt(base+pos, fmt.Errorf("record size %d exceeds the %d bytes left in the flush", size, int64(len(data))-pos))
		}
		off := pos
		pos += size
		if typ != lastID {
			f := h.lookup(typ)
			if len(f.each) == 0 && len(f.batch) == 0 {
				continue
			}
			if cl = c.Metadata.Class(typ); cl == nil || typ < 2 {
				return c.errorAt(base+off, fmt.Errorf("record of type %d is not an event", typ))
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
		if len(fns.batch) > 0 {
			var err error
			if pos, err = l.dispatchBatch(c, data, off, typ, cl, fns.batch, ev); err != nil {
				return err
			}
			continue
		}
		ev.prepareLazy(c, cl, c.Offset+base+off, size)
		for _, fn := range fns.each {
			fn(ev)
		}
		if ev.err != nil {
			return ev.err
		}
	}
	return nil
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

// EventBatch is a row of events of one type in a flush, records of the
// type end to end, as LiveChunk.Dispatch hands it to a batch handler
// (EventHandlers.SetBatch), which takes them in a range loop:
//
//	for ev := range b.Events() {
//		...
//	}
//
// The loop prepares the same Event for each record, as Dispatch does for
// an event handler (its fields decoded when first asked for), so it is
// valid during its iteration only. A batch is valid during the handler's
// call; its Events hands over nothing after it.
type EventBatch struct {
	ev     *Event
	data   []byte // the chunk's bytes up to the end of the dispatch, or of the row
	offset int64  // of data in the file
	next   int    // offset in data of the next record
	start  int    // of the row's first record
	id     int    // the row's type id if it takes a byte, else -1
	typ    int64  // the row's type id
	// like is what Events' tier 1 expects: in its low 16 bits the
	// header (size and type id, a byte each) of the record before. Bit
	// 16 set turns tier 1 off, as dispatchBatch has it before tier 2
	// takes a record (a header of 0 would match a record of size 0),
	// and bit 17 for the rest of the row. Its high 32 bits count the
	// records tier 2 took.
	like uint64
}

// Events returns the row's events not yet taken, in order. It stops at a
// decoding error a field met (Event.Err), which Dispatch then returns.
func (b *EventBatch) Events() iter.Seq[*Event] {
	// The compiler inlines this loop in the handler's range loop, and the
	// loop's body in it, so that an event costs no call (a Go call spills
	// every live register) and the next record's offset stays in a
	// register. Walking records by their sizes is a chain of loads, each
	// record's place waiting for the size before it (about 6 cycles an
	// event whatever the instructions), which tier 1 breaks where a row's
	// records have one header (fields of fixed width): it takes the next
	// record on its header's two bytes, compared with the last ones, so
	// the branch predictor guesses its size before it is loaded. In
	// BenchmarkDispatchBatch, about 40% less time an event for records of
	// one size (callgrind counts as many instructions, 26 an event), and
	// about the same for sizes that change, once tier 1 is off (8 more
	// instructions an event). Tier 2 reads any record of a one-byte size
	// and type id, nextRecord any other.
	return func(yield func(*Event) bool) {
		d, p, e, off, id := b.data, uint(b.next), b.ev, b.offset, b.id
		seen := uint64(1)<<32 | uint64(id)<<8
		for {
			n := uint(len(d))
			// Tier 1: a record with the header of the one before, as
			// records of fields of fixed width have. Its size is known
			// before its bytes are loaded, so the walk is no chain of
			// loads, each waiting for the size before it.
			if like := b.like; uint32(like) < 1<<16 {
				if next := p + uint(like&0xff); next <= n && p+1 < n && uint32(d[p])|uint32(d[p+1])<<8 == uint32(like) && e.err == nil {
					e.Offset, e.Size, e.pending = off+int64(p), int64(like&0xff), true
					if e.Fields != nil {
						e.Fields = nil
					}
					p = next
					goto yield
				}
			}
			// Tier 2: any one-byte size and type id. Tested as p < n
			// and next <= n, not with n-p: the bounds check of d[p] is
			// spared, and n keeps its register. The goto keeps one yield
			// call, inlined once, and the size read once, in a register.
			if p < n && p+1 < n && int(d[p+1]) == id {
				s, next := uint(d[p]), p+uint(d[p])
				if s-2 < 0x80-2 && next <= n && e.err == nil {
					if like := b.like; like&(1<<17) == 0 {
						like = (like&^0x1ffff + seen) | uint64(s)
						// Records whose sizes change (strings,
						// varints crossing a byte) make tier 1's
						// branch guess wrong, each miss costing more
						// than tier 2 does: past 8 misses and about
						// one in 16 records (256 bytes a record tier
						// 2 took), tier 1 is off for the rest of the
						// row.
						if like>>32<<8 > uint64(p-uint(b.start))+2048 {
							like |= 1 << 17
						}
						b.like = like
					}
					e.Offset, e.Size, e.pending = off+int64(p), int64(s), true
					if e.Fields != nil {
						e.Fields = nil
					}
					p = next
					goto yield
				}
			}
			b.next = int(p)
			if !b.nextRecord() {
				return
			}
			p = uint(b.next)
		yield:
			if !yield(e) {
				break
			}
		}
		b.next = int(p)
	}
}

// nextRecord makes the event the record at b.next, of any header, every
// bound checked, and tells whether there was one: the row ends at a
// record of another type or one it cannot walk, which Dispatch then
// reports, and at a decoding error.
func (b *EventBatch) nextRecord() bool {
	p := int64(b.next)
	if p >= int64(len(b.data)) || b.ev.err != nil {
		return false
	}
	size, typ, _, err := recordHeader(b.data, p)
	if err != nil || typ != b.typ {
		return false
	}
	b.ev.prepareLazy(b.ev.Chunk, b.ev.Type, b.offset+p, size)
	b.next += int(size)
	return true
}

// Type returns the class of the row's events, nil after the handler's
// call.
func (b *EventBatch) Type() *Class {
	if b.ev == nil {
		return nil
	}
	return b.ev.Type
}

// dispatchBatch hands the row of events of type cl (id typ) from the
// record at off in data to each of fns in turn, and returns the offset of
// the first record after the row.
func (l *LiveChunk) dispatchBatch(c *Chunk, data []byte, off, typ int64, cl *Class, fns []func(*EventBatch), ev *Event) (int64, error) {
	b := &l.batch
	id := -1
	if typ < 0x80 {
		id = int(typ)
	}
	*b = EventBatch{ev: ev, data: data, offset: c.Offset + c.base, next: int(off), start: int(off), id: id, typ: typ, like: 1 << 16}
	ev.prepareLazy(c, cl, c.Offset+c.base+off, 0)
	for i, fn := range fns {
		if i > 0 {
			// The row again, up to its end.
			b.data, b.next = data[:b.next], b.start
		}
		fn(b)
		for range b.Events() {
			// The events fn did not take.
		}
		if ev.err != nil {
			return 0, ev.err
		}
	}
	end := int64(b.next)
	*b = EventBatch{}
	return end, nil
}
