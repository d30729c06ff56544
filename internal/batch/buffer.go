package batch

import (
	"sync/atomic"
	"unsafe"

	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/internal/stack"
)

// Sizes of a buffer. 128 KiB holds a few thousand small events; the sets
// hold the distinct goroutines and stacks one buffer may refer to before it
// is handed off early.
const (
	BufferSize = 128 << 10
	// MaxEventSize bounds an event's record as the emit path reckons it
	// (its fixed fields' largest size plus its strings' lengths): a
	// larger event never fits a buffer and is dropped, and counted.
	MaxEventSize = BufferSize

	// Slack is the bytes a buffer has past BufferSize, so that the emit
	// path may store a whole word at the end of a record (emit.Record).
	Slack = 8

	setSize  = 256 // power of two
	setLimit = setSize * 3 / 4
	// threadSetSize (a power of two) bounds the distinct goroutines one
	// buffer's events refer to: with thousands of goroutines emitting,
	// a smaller set sent buffers off nearly empty (256: 2% full), and
	// the flusher could not recycle them fast enough. Each event of
	// another goroutine takes a thread; at 6,144 of them, events of 17
	// bytes (BenchmarkManyGoroutines') fill four fifths of the records
	// before the set does. With 4,096 (3,072 threads) such a buffer went
	// off 40% full, so the buffers held 2.5 times fewer events than they
	// have room for, and at 2 M events/s the pool lasted about 120 ms
	// of a flush that the run queues of 10,000 goroutines delay (see
	// docs/perf/recorder.md, "Many goroutines").
	threadSetSize = 8192
	threadLimit   = threadSetSize * 3 / 4
	stackWords    = 4 << 10
	// funcSetSize (a power of two) bounds the distinct functions (Func
	// fields) one buffer's events refer to.
	funcSetSize = 64
	funcLimit   = funcSetSize * 3 / 4
)

// Buffer is a per-P buffer of encoded event records.
//
// # The publish protocol
//
// This is the one place the protocol between the emit path (the writer)
// and the recorder's flusher (the reader) is written down.
//
//  1. Ownership. A buffer installed in a P's Slot has one writer at a
//     time: the goroutine pinned to that P (package pin). It alone
//     writes data, the sets and the counts, with plain stores; no lock.
//  2. Publication. After each complete event, Commit stores the packed
//     extent (bytes, threads, stack words, strings, functions: pack) into
//     committed with sync/atomic's StoreUint64. Everything the writer
//     wrote to the buffer before that store happens before any Take that
//     loads the value (or a later one) with LoadUint64: the Go memory
//     model's rule for sync/atomic, which the race detector checks. The
//     same code runs with and without -race.
//  3. Reading a live buffer. At a chunk cut the flusher (Session.Live)
//     Takes the published prefix of each installed buffer: records from
//     its previous Take (taken, the flusher's own field) up to the loaded
//     extent, and the first entries of the append-only lists. The writer
//     only ever writes past the published extent and appends to the
//     lists, so the flusher never reads a byte being written.
//  4. Hand-off. A full buffer leaves its Slot (an atomic pointer) and goes
//     through the Full channel; the channel send happens before the
//     flusher's receive, so the flusher then owns the whole buffer. It
//     Resets it (an atomic store of committed, which a later writer
//     follows through the free channel) and returns it through Recycle.
//  5. End of a session. No writer may still be in a buffer when the
//     flusher takes its last look: Activate(nil) stops new events, and
//     pin.Quiesce waits for those being written.
//
// Cost: on amd64 the atomic store is an XCHG (a full fence), against a
// plain MOV, which x86 orders the same way but which the memory model
// does not count as synchronisation. In the emit path it costs nothing
// measurable: the emitting thread's CPU time per event was the same with a
// plain store (27.4-28.2 ns against 27.7-28.3, 2026-11-24; see docs/perf/recorder.md).
// Publishing less often (every N events, or when the flusher asks) would
// leave the last events of a P that goes idle unpublished, unreadable by
// any flushpoint or Stop: only the writer can publish, and it runs only
// when it emits.
type Buffer struct {
	// committed packs the counts of bytes, threads, stack words, strings
	// and functions (see pack) as of the last complete event; the writer
	// publishes it, the flusher loads it. First in the struct, so that it
	// is 64-bit aligned for atomic access on 32-bit platforms too.
	committed uint64

	// The writer's state.
	n, nthreads, nstack int // used bytes, threads, stack words
	// counts packs the counts but bytes (see pack); the rare paths that
	// change them update it, so that Commit need not pack on every event.
	counts uint64
	lastG  uint64
	// gTail is lastG's varint and a 0 byte after it (the stack trace key of
	// an event without one), little-endian, gTailLen its length (0 if
	// more than 8 bytes): what the emit path stores after an event's time.
	gTail    uint64
	gTailLen int
	// times is the length of the varints of the last event's time and
	// of those as long (see leb128.LenRange), for the emit path.
	times     leb128.LenRange
	nstacks   int
	threadSet [threadSetSize]uint64
	stackSet  [setSize]uint64
	strCache  [strCacheSize]strSlot
	nstrs     int
	funcSet   [funcSetSize]uintptr
	nfuncs    int

	// taken is how many bytes the flusher has taken; only it uses it.
	taken int

	data    [BufferSize + Slack]byte
	threads [threadLimit]uint64 // goroutine ids the events refer to, each once
	strs    [setLimit]uint64    // keys of the pooled strings they refer to
	funcs   [funcLimit]uintptr  // ids (FuncID) of the functions they refer to
	// stacks holds the stack traces the events refer to, each once, as
	// key, depth, pcs..., key, depth, pcs...
	stacks [stackWords]uintptr
}

// NewBuffer allocates an empty buffer.
func NewBuffer() *Buffer { return new(Buffer) }

// Reset empties b for reuse. Only the flusher calls it, on a buffer no P
// holds. The thread set is emptied by clearing the slots of the goroutines
// it lists, not the whole table: a buffer most often refers to a few
// goroutines, and clearing the 32 KiB table for each 128 KiB of records
// was a fifth of the memory the flusher wrote beside a tight emit loop.
func (b *Buffer) Reset() {
	clearSet(b.threadSet[:], b.threads[:b.nthreads])
	b.n, b.nthreads, b.nstack, b.nstacks, b.nstrs = 0, 0, 0, 0, 0
	b.lastG, b.gTailLen = 0, 0
	b.stackSet = [setSize]uint64{}
	b.strCache = [strCacheSize]strSlot{}
	b.funcSet = [funcSetSize]uintptr{}
	b.nfuncs = 0
	b.counts = 0
	atomic.StoreUint64(&b.committed, 0)
	b.taken = 0
}

// clearSet empties an open-addressed set table filled by addTo with the
// values of list, in list's order; past an eighth of the table, clearing
// it whole is cheaper. The values are cleared last first: a value's probe
// sequence runs only through slots of values added before it, which are
// still there when it is cleared.
func clearSet(table, list []uint64) {
	if len(list) > len(table)/8 {
		clear(table)
		return
	}
	mask := uint64(len(table) - 1)
	for j := len(list) - 1; j >= 0; j-- {
		v := list[j]
		for i := home(v, mask); table[i] != 0; i = (i + 1) & mask {
			if table[i] == v {
				table[i] = 0
				break
			}
		}
	}
}

// Fits tells whether n more bytes fit.
func (b *Buffer) Fits(n int) bool { return b.n+n <= BufferSize }

// Len returns how many bytes of records the buffer holds. Only its
// writer, or the flusher once it owns the buffer, calls it.
func (b *Buffer) Len() int { return b.n }

// Tail returns the free part of the buffer, to encode an event into.
func (b *Buffer) Tail() []byte { return b.data[b.n:BufferSize] }

// Free returns the address of Tail's first byte, without Tail's bounds
// check, for the emit path, which checked with Fits that the record's
// bytes are free.
func (b *Buffer) Free() unsafe.Pointer { return unsafe.Add(unsafe.Pointer(&b.data), b.n) }

// Commit adds the n bytes just encoded at Tail and publishes the buffer's
// new extent to the flusher.
func (b *Buffer) Commit(n int) {
	b.n += n
	atomic.StoreUint64(&b.committed, uint64(b.n)|b.counts)
}

// recount updates counts after a count changed.
func (b *Buffer) recount() { b.counts = pack(0, b.nthreads, b.nstack, b.nstrs, b.nfuncs) }

// pack packs the counts of Commit into one word: bytes (18 bits), threads
// (13), stack words (14), strings and functions (8 each).
func pack(n, threads, stack, strs, funcs int) uint64 {
	return uint64(n) | uint64(threads)<<18 | uint64(stack)<<31 | uint64(strs)<<45 | uint64(funcs)<<53
}

// The counts fit their fields in pack (a negative constant does not
// convert to uint: a build error).
const (
	_ = uint(1<<18 - 1 - BufferSize)
	_ = uint(1<<13 - 1 - threadLimit)
	_ = uint(1<<14 - 1 - stackWords)
	_ = uint(1<<8 - 1 - setLimit)
	_ = uint(1<<8 - 1 - funcLimit)
)

func unpack(c uint64) (n, threads, stack, strs, funcs int) {
	return int(c & (1<<18 - 1)), int(c >> 18 & (1<<13 - 1)), int(c >> 31 & (1<<14 - 1)), int(c >> 45 & 0xff), int(c >> 53 & 0xff)
}

// TimeLens returns the buffer's cache of the length of its events'
// times (see leb128.LenRange), which only the writer uses. It need not be
// emptied when the buffer is: it holds what is true of any value.
func (b *Buffer) TimeLens() *leb128.LenRange { return &b.times }

// SameThread tells whether g is the goroutine the buffer's last event
// referred to, which AddThread need not note again.
func (b *Buffer) SameThread(g uint64) bool { return g == b.lastG }

// ThreadTail returns the varint of the goroutine SameThread compares with
// and a 0 byte, as a word to store little-endian, and its length; 0 if it
// takes more than a word.
func (b *Buffer) ThreadTail() (uint64, int) { return b.gTail, b.gTailLen }

// AddThread notes that an event refers to goroutine g (g > 0). It returns
// false if the buffer's thread set is full.
func (b *Buffer) AddThread(g uint64) bool {
	if b.SameThread(g) {
		return true
	}
	return b.addThread(g)
}

func (b *Buffer) addThread(g uint64) bool {
	if !addTo(b.threadSet[:], b.threads[:], &b.nthreads, g) {
		return false
	}
	b.lastG = g
	b.gTail, b.gTailLen = 0, 0
	if g < 1<<49 { // its varint and the 0 byte in a word
		w, n := leb128.Word(g)
		b.gTail, b.gTailLen = w, n+1
	}
	b.recount()
	return true
}

// AddFunc notes that an event refers to the function of id (FuncID,
// non-zero). It returns false if the buffer's function set is full.
func (b *Buffer) AddFunc(id uintptr) bool {
	if !addTo(b.funcSet[:], b.funcs[:], &b.nfuncs, id) {
		return false
	}
	b.recount()
	return true
}

// addTo adds v (non-zero) to the open-addressed set table (its length a
// power of two) and, if it is new, to list[*n]. It returns false if it is
// new and list is full.
func addTo[T uint64 | uintptr](table, list []T, n *int, v T) bool {
	mask := uint64(len(table) - 1)
	for i := home(uint64(v), mask); ; i = (i + 1) & mask {
		switch table[i] {
		case v:
			return true
		case 0:
			if *n >= len(list) {
				return false
			}
			table[i] = v
			list[*n] = v
			*n++
			return true
		}
	}
}

// home is the slot where addTo's probe for v starts, in a table of
// mask+1 slots.
func home(v, mask uint64) uint64 { return v * 0x9E3779B97F4A7C15 >> 32 & mask }

// AddStack notes that an event refers to the stack pcs with the given key
// (non-zero). It returns false if the buffer has no room for it.
func (b *Buffer) AddStack(key uint64, pcs []uintptr) bool {
	for i := key & (setSize - 1); ; i = (i + 1) & (setSize - 1) {
		switch b.stackSet[i] {
		case key:
			return true
		case 0:
			if b.nstacks >= setLimit || b.nstack+2+len(pcs) > stackWords {
				return false
			}
			b.stackSet[i] = key
			b.nstacks++
			b.stacks[b.nstack] = uintptr(key)
			b.stacks[b.nstack+1] = uintptr(len(pcs))
			copy(b.stacks[b.nstack+2:], pcs)
			b.nstack += 2 + len(pcs)
			b.recount()
			return true
		}
	}
}

// Taken is what Take returns.
type Taken struct {
	Records []byte
	Threads []uint64 // goroutine ids
	Stacks  []uintptr
	Strings []uint64  // keys of pooled strings (Interned)
	Funcs   []uintptr // ids (FuncID) of referenced functions
}

// Take returns the records published since the last Take and every
// goroutine, stack and pooled string the buffer's events refer to so far
// (a chunk's constant pools need them again even if an earlier chunk had
// them). The writer may go on filling the buffer meanwhile. Only the
// flusher calls it.
func (b *Buffer) Take() Taken {
	n, nt, ns, nk, nf := unpack(atomic.LoadUint64(&b.committed))
	t := Taken{Records: b.data[b.taken:n:n], Threads: b.threads[:nt:nt], Stacks: b.stacks[:ns:ns],
		Strings: b.strs[:nk:nk], Funcs: b.funcs[:nf:nf]}
	b.taken = n
	return t
}

// Slot holds the buffer of one P, and room to capture a stack trace in.
type Slot struct {
	buf     atomic.Pointer[Buffer]
	scratch stack.PCs
	_       [56]byte // keep slots on separate cache lines
}
