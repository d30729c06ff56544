package batch

import (
	"sync"
	"sync/atomic"
)

// GoroutineInfo is what a program said about a goroutine
// (event.SetGoroutineName).
type GoroutineInfo struct {
	Name   string
	Labels string // "k1=v1 k2=v2"
}

// The name registry. A goroutine that forgets its name (typically as it
// exits) keeps it until the chunks that may hold its events are written:
// names are resolved when a chunk is, and the chunk being gathered and the
// one queued behind the one being written both come after. Forgotten
// names wait for three sweeps (one per chunk written), at most maxRetired
// of them when no recorder sweeps.
//
// Goroutines that exit without forgetting their names leave them behind,
// and the runtime says nothing when a goroutine exits: so the registry
// holds at most maxNames names, whether or not a recorder runs. Past that,
// setting a name evicts the oldest one a chunk has not looked up since it
// was last passed over (a second chance, as a CLOCK page cache gives): a
// goroutine that still emits events keeps its name as long as the
// recorder writes it, while those of exited goroutines go first.
var names struct {
	sync.Mutex
	m       map[uint64]entry
	seq     uint64
	retired [retireGens][]retiredName
	// queue holds the named goroutines oldest first, each as its id and
	// the seq of the SetName that added it to m; items whose entry has
	// gone or was added again since are stale, dropped when met.
	queue []retiredName
	head  int // queue[head:] is live
}

type entry struct {
	info  GoroutineInfo
	seq   uint64 // which setting of the name this is
	added uint64 // the seq that added g to m (its queue item)
	used  bool   // looked up since added or last passed over
}

type retiredName struct{ g, seq uint64 }

const (
	retireGens = 3
	maxRetired = 1 << 16
	// maxNames bounds the registry: about 100 bytes a name, plus its
	// strings. The recorder caches as many (recorder.maxThreadNames).
	maxNames = 1 << 16
)

// SetName records goroutine g's name and labels.
func SetName(g uint64, info GoroutineInfo) {
	names.Lock()
	defer names.Unlock()
	if names.m == nil {
		names.m = make(map[uint64]entry)
	}
	names.seq++
	e, ok := names.m[g]
	if !ok {
		evict()
		e.added = names.seq
		names.queue = append(names.queue, retiredName{g, names.seq})
	}
	e.info, e.seq = info, names.seq
	names.m[g] = e
	namesVersion.Store(names.seq)
}

// evict makes room for one more name, and compacts the queue when stale
// items make up most of it.
func evict() {
	for len(names.m) >= maxNames {
		it := names.queue[names.head]
		names.head++
		e, ok := names.m[it.g]
		switch {
		case !ok || e.added != it.seq:
			// stale
		case e.used:
			e.used = false
			names.m[it.g] = e
			names.queue = append(names.queue, it)
		default:
			delete(names.m, it.g)
		}
	}
	if live := len(names.queue) - names.head; live > 2*len(names.m)+64 || names.head > live {
		q := names.queue[:0]
		for _, it := range names.queue[names.head:] {
			if e, ok := names.m[it.g]; ok && e.added == it.seq {
				q = append(q, it)
			}
		}
		clear(names.queue[len(q):])
		names.queue, names.head = q, 0
	}
}

// ForgetName lets goroutine g's name go once the chunks that may refer to
// it are written.
func ForgetName(g uint64) {
	names.Lock()
	defer names.Unlock()
	e, ok := names.m[g]
	if !ok {
		return
	}
	r := &names.retired[0]
	*r = append(*r, retiredName{g, e.seq})
	if len(*r) > maxRetired {
		deleteRetired((*r)[0])
		*r = (*r)[1:]
	}
}

// LookupName returns what SetName recorded for goroutine g.
func LookupName(g uint64) (GoroutineInfo, bool) {
	names.Lock()
	defer names.Unlock()
	return lookupName(g)
}

// TryLookupName is LookupName for a caller that must not block (one
// pinned to its P): busy is true, and nothing is looked up, when the
// registry is locked.
func TryLookupName(g uint64) (info GoroutineInfo, found, busy bool) {
	if !names.TryLock() {
		return GoroutineInfo{}, false, true
	}
	defer names.Unlock()
	info, found = lookupName(g)
	return info, found, false
}

// lookupName is LookupName's body, under names' lock.
func lookupName(g uint64) (GoroutineInfo, bool) {
	e, ok := names.m[g]
	if ok && !e.used {
		e.used = true
		names.m[g] = e
	}
	return e.info, ok
}

// namesVersion is names.seq, read without the lock.
var namesVersion atomic.Uint64

// NamesVersion changes whenever a name is set: the recorder, which keeps
// the names it wrote from chunk to chunk, looks them up again then. It
// takes no lock: the recorder's flusher calls it pinned.
func NamesVersion() uint64 { return namesVersion.Load() }

// SweepNames ages the forgotten names by one chunk, deleting the oldest.
// The recorder calls it after writing each chunk.
func SweepNames() {
	names.Lock()
	defer names.Unlock()
	sweepNames()
}

// TrySweepNames sweeps unless the names are locked, for callers that may
// not block; it tells whether it swept.
func TrySweepNames() bool {
	if !names.TryLock() {
		return false
	}
	defer names.Unlock()
	sweepNames()
	return true
}

// sweepNames is SweepNames with the names locked.
func sweepNames() {
	last := &names.retired[retireGens-1]
	for _, r := range *last {
		deleteRetired(r)
	}
	old := (*last)[:0]
	copy(names.retired[1:], names.retired[:retireGens-1])
	names.retired[0] = old
}

// deleteRetired deletes a forgotten name unless it was set again since.
func deleteRetired(r retiredName) {
	if e, ok := names.m[r.g]; ok && e.seq == r.seq {
		delete(names.m, r.g)
	}
}
