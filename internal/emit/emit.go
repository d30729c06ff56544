package emit

import (
	"encoding/binary"
	"runtime"
	"unsafe"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/clock"
	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/internal/pin"
	"github.com/flightrec/flightrec/internal/stack"
)

// fastClock tells whether Record reads the time and the goroutine id in
// one call (clock.NowAndGWord). A variable, so that a test can take the
// other paths on any platform (ForceSlowClock).
var fastClock = stack.GoidFast && clock.GWord

// ForceSlowClock makes Record take the path of platforms where the
// goroutine id is fast to read but the clock-and-id call is not (arm64),
// until the returned function restores the platform's path. For tests.
func ForceSlowClock() (restore func()) {
	old := fastClock
	fastClock = false
	return func() { fastClock = old }
}

// Header is the state of an event handle; event.Instant and event.Timed
// wrap it and must be the first field of an event struct, so a pointer
// to the struct is a pointer to its header.
type Header struct {
	D     *batch.Desc // nil: disabled or committed
	Start int64       // ticks; 0 for an Instant until committed (or SetTime)
	End   int64       // ticks; 0 until ShouldCommit, Commit or SetTimes
}

// Record begins the record of the event whose header is h, with extra
// bytes of strings besides the type's FixedMax, and marks the event
// committed. It pins the goroutine to its P (Writer.Unpin ends that),
// reads the time and the goroutine id, drops a timed event below the
// threshold, finds room in the P's buffer and writes the record's header:
// type id, startTime, duration, eventThread and stackTrace. ok is false
// if the event is not to be written (then nothing is pinned).
//
// The common case (no stack trace, no Goroutine or Func field, room in the
// P's buffer, the same goroutine as the buffer's last event) runs straight
// through, with two calls: pinning, and the clock and goroutine id.
// uncommon handles the rest out of line: with its loop in here, the
// compiler kept more values on the stack (2.3 ns per event more).
//
//go:noinline
func Record(h *Header, extra int) (w Writer, ok bool) {
	d := h.D
	start, end := h.Start, h.End
	// Committed: a later Begin of the same variable starts afresh.
	h.D, h.Start, h.End = nil, 0, 0
	// Pinned to its P, this goroutine is the only writer of the P's buffer
	// and stack scratch: no lock, and one atomic store publishes the event
	// to the flusher (batch.Buffer). Pinning before the clock read, not after it,
	// measured faster (by 4 ns in a variant specialised to one type).
	// The time the event still needs, if any: an Instant's, or a Timed
	// event's end unless ShouldCommit took it (0: it needs one). Where
	// the clock and the goroutine id are one call the calls are inline;
	// elsewhere pinSlow makes them.
	t := start
	if d.Timed {
		t = end
	}
	var id int
	var g uint64
	var now int64
	if fastClock && t == 0 {
		id = pin.Pin()
		now, g = clock.NowAndGWord(stack.GoidOffset())
		t = now
	} else if fastClock {
		id = pin.Pin()
		g = stack.GoidAt()
	} else {
		id, g, now = pinSlow(t == 0)
		if t == 0 {
			t = now
		}
	}
	if d.Timed {
		end = t
		if d.Short(end - start) {
			pin.Unpin(id)
			return Writer{}, false
		}
	} else {
		start = t
	}
	size := d.FixedMax + extra
	// One load and branch for each case uncommon handles.
	b := batch.Current(id)
	var skey uint64
	// Each test jumps out on its own: written as one condition, the
	// compiler set a flag for each test and tested the flags.
	if b == nil {
		goto slow
	}
	if d.Noting() {
		goto slow
	}
	if !b.Fits(size) {
		goto slow
	}
	if !b.SameThread(g) {
		goto slow
	}
	if batch.Active() == nil {
		goto slow
	}
	if now >= batch.StallAt() {
		goto slow
	}
	goto fast
slow:
	if b, skey, id = uncommon(h, d, id, start, end, g, size, now); b == nil {
		return Writer{}, false
	}
fast:
	w.b = b
	// The record: size, type id, startTime, duration, eventThread,
	// stackTrace, fields. The size is one byte when the record cannot
	// exceed 127 bytes, else a 4-byte padded varint (Writer.End). Bytes
	// are stored through a pointer, without bounds checks: Fits checked
	// that size, which bounds the record, is free.
	w.out = b.Free()
	w.tag = id << 1
	i := 1
	if size > 127 {
		i = 4
		w.tag |= 1
	}
	// The type id, the time and the goroutine are each one store of a
	// whole word, whose bytes past the varint fall in the record's or the
	// buffer's free part (batch.Slack): the id's and the goroutine's
	// varints are made once (the goroutine's when the buffer notes it),
	// the time's by leb128.Word. Written a byte a turn, each turn waiting on the
	// last, they took 12 instructions an event more, and more time.
	put64(w.out, i, d.IDVarint)
	i += d.IDLen
	// start and duration come from SetTime or SetTimes too, and may be
	// negative (a time before the process started): the 9-byte form.
	// The time's length comes from the buffer's cache when it is that of
	// its last event's, as it nearly always is: not computed from a time
	// just read, on which all the record's later stores would then wait.
	if x, n, ok := b.TimeLens().Word(uint64(start)); ok {
		put64(w.out, i, x)
		i += n
	} else if uint64(start) <= leb128.WordMax {
		r := b.TimeLens()
		r.Set(uint64(start))
		x, n, _ := r.Word(uint64(start))
		put64(w.out, i, x)
		i += n
	} else {
		i = putVarint(w.out, i, uint64(start))
	}
	if d.Timed {
		i = putVarint(w.out, i, uint64(end-start))
	}
	// With no stack trace, the goroutine's varint and the key 0 after it.
	if t, n := b.ThreadTail(); skey == 0 && n != 0 {
		put64(w.out, i, t)
		w.i = i + n
	} else {
		i = putVarint(w.out, i, g)
		w.i = putVarint(w.out, i, skey)
	}
	return w, true
}

// pinSlow is Record's pinning and reading of the goroutine id and, if
// needNow, the time, where the clock and the id are not one call
// (fastClock false). The portable goroutine id parses runtime.Stack
// with a buffer from a sync.Pool, which may take a mutex: it is read
// before pinning, as pinned code must not block ("schedule: holding
// locks").
//
//go:noinline
func pinSlow(needNow bool) (id int, g uint64, now int64) {
	if !stack.GoidFast {
		g = stack.Goid()
	}
	id = pin.Pin()
	if stack.GoidFast {
		g = stack.GoidAt()
	}
	if needNow {
		now = clock.Now()
	}
	return id, g, now
}

// uncommon is Record's way to a buffer when the common case does not
// hold: it handles a missing, full or other-goroutine buffer, a stack
// trace, references and a flusher falling behind or late (yielding the
// P, which may move the goroutine to another P: it returns the P it is
// pinned to).
// It returns a nil buffer, unpinned, if the event is not to be written
// (no session, or dropped and counted).
//
//go:noinline
func uncommon(h *Header, d *batch.Desc, id int, start, end int64, g uint64, size int, now int64) (*batch.Buffer, uint64, int) {
	for late := now >= batch.StallAt(); ; late = false {
		s := batch.Active()
		if s == nil {
			pin.Unpin(id)
			return nil, 0, id
		}
		if late && !batch.Writing() {
			// The flusher is late (batch.StallAt): wake it, and yield
			// the P once for this event, unless it is writing, which
			// yields do not speed up.
			s.WakeFlusher()
			pin.Unpin(id)
			runtime.Gosched()
			id = pin.Pin()
			continue
		}
		b := batch.Current(id)
		if b != nil && !d.Noting() && b.Fits(size) && b.SameThread(g) {
			return b, 0, id
		}
		b, skey, yield, renew := prepare(s, b, id, d, unsafe.Pointer(h), g, size)
		if renew {
			// The session's table of stack ids is full: replace it
			// unpinned (it allocates), then capture the stack again.
			// (Past the session's last keys, prepare takes no more
			// stacks.)
			pin.Unpin(id)
			s.RenewStacks()
			id = pin.Pin()
			continue
		}
		if b == nil {
			pin.Unpin(id)
			drop(s, d, unsafe.Pointer(h), start, end, g, skey, size)
			if size <= batch.MaxEventSize {
				// No buffer was free: the flusher is behind. Let it
				// run rather than spin through drops until the
				// scheduler preempts this goroutine (10 ms).
				runtime.Gosched()
			}
			return nil, 0, id
		}
		if !yield {
			return b, skey, id
		}
		// The flusher is falling behind: let it run (see
		// batch.Session.Behind), then find this goroutine's P's buffer
		// again. The event keeps its time.
		pin.Unpin(id)
		runtime.Gosched()
		id = pin.Pin()
	}
}

// prepare is uncommon's slow step. It captures the stack trace if the
// type records them (and the session's stack keys are not used up), notes
// the event's references (its goroutine, stack, and Goroutine or Func
// fields) in the P's buffer b, and hands b off for a fresh one of session
// s when b is full or absent. It returns the buffer to encode into, the
// stack's key (0: none) and whether to yield the P once unpinned (see
// batch.Session.Behind); or a nil buffer (and the stack's key) if the
// event is to be dropped, which Record counts; or renew, and nothing
// else, if the session's table of stack ids is full.
//
//go:noinline
func prepare(s *batch.Session, b *batch.Buffer, id int, d *batch.Desc, p unsafe.Pointer, g uint64, size int) (_ *batch.Buffer, skey uint64, yield, renew bool) {
	var pcs []uintptr
	if d.StackOn() && !s.StacksExhausted() {
		if sc := batch.Scratch(id); sc != nil {
			// Skip prepare, uncommon, Record and Commit (or a
			// generated Commit's flightrecCommit, into which
			// eventimpl.Record inlines): the stack starts in the caller
			// of Commit.
			pcs = sc[:stack.Capture(4, sc)]
			if skey = s.StackID(pcs); skey == 0 {
				return nil, 0, false, true
			}
		}
	}
	if b != nil && b.Fits(size) && b.AddThread(g) && (skey == 0 || b.AddStack(skey, pcs)) && (!d.Refs || refsFit(b, d, p)) {
		return b, skey, false, false
	}
	if b = swap(s, id, d, p, g, pcs, skey, size); b == nil {
		return nil, skey, false, false
	}
	return b, skey, s.Behind(), false
}

// swap hands the P's buffer off and notes the event's references in a
// fresh one, or returns nil, and the event is dropped and counted: when
// no buffer is free, or when the event could exceed batch.MaxEventSize.
//
//go:noinline
func swap(s *batch.Session, id int, d *batch.Desc, p unsafe.Pointer, g uint64, pcs []uintptr, skey uint64, size int) *batch.Buffer {
	var b *batch.Buffer
	if size <= batch.MaxEventSize {
		b = s.Swap(id)
	}
	if b == nil {
		return nil
	}
	// An empty buffer takes one thread, one stack and the references.
	b.AddThread(g)
	if skey != 0 {
		b.AddStack(skey, pcs)
	}
	refsFit(b, d, p)
	return b
}

// refsFit notes the goroutines and functions that Goroutine and Func
// fields refer to.
func refsFit(b *batch.Buffer, d *batch.Desc, p unsafe.Pointer) bool {
	for i := range d.Fields {
		switch f := &d.Fields[i]; f.Kind {
		case batch.Thread:
			if g := *(*uint64)(unsafe.Add(p, f.Offset)); g != 0 && !b.AddThread(g) {
				return false
			}
		case batch.Func:
			if id := *(*uintptr)(unsafe.Add(p, f.Offset)); id != 0 && !b.AddFunc(id) {
				return false
			}
		}
	}
	return true
}

// putVarint writes any value as JFR's varint: LEB128 up to 2^56, and from
// there 9 bytes, the last holding 8 bits (where LEB128 would take 10 from
// 2^63). Small enough to inline into the Writer's methods. The common
// case's loop tests the value only, 7 instructions a byte: with the
// 9-byte bound in the same loop it took 10.
func putVarint(out unsafe.Pointer, i int, v uint64) int {
	if v >= 1<<56 {
		for end := i + 8; i < end; i++ {
			*(*byte)(unsafe.Add(out, i)) = byte(v) | 0x80
			v >>= 7
		}
	} else {
		// putUvarint's loop, written out: calling it would put
		// Writer.Varint over the inlining budget.
		for ; v >= 0x80; i++ {
			*(*byte)(unsafe.Add(out, i)) = byte(v) | 0x80
			v >>= 7
		}
	}
	*(*byte)(unsafe.Add(out, i)) = byte(v)
	return i + 1
}

// putUvarint writes v < 2^56 as LEB128, which is JFR's varint there.
func putUvarint(out unsafe.Pointer, i int, v uint64) int {
	for ; v >= 0x80; i++ {
		*(*byte)(unsafe.Add(out, i)) = byte(v) | 0x80
		v >>= 7
	}
	*(*byte)(unsafe.Add(out, i)) = byte(v)
	return i + 1
}

// put64 stores x at out+i, little-endian, whatever the alignment. Through
// an array pointer, not unsafe.Slice, whose overflow check took 4
// instructions a store.
func put64(out unsafe.Pointer, i int, x uint64) {
	binary.LittleEndian.PutUint64((*[8]byte)(unsafe.Add(out, i))[:], x)
}
