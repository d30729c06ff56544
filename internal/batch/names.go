package batch

import "sync"

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
var names struct {
	sync.Mutex
	m       map[uint64]entry
	seq     uint64
	retired [retireGens][]retiredName
}

type entry struct {
	info GoroutineInfo
	seq  uint64 // which setting of the name this is
}

type retiredName struct{ g, seq uint64 }

const (
	retireGens = 3
	maxRetired = 1 << 16
)

// SetName records goroutine g's name and labels.
func SetName(g uint64, info GoroutineInfo) {
	names.Lock()
	defer names.Unlock()
	if names.m == nil {
		names.m = make(map[uint64]entry)
	}
	names.seq++
	names.m[g] = entry{info: info, seq: names.seq}
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
	e, ok := names.m[g]
	return e.info, ok
}

// SweepNames ages the forgotten names by one chunk, deleting the oldest.
// The recorder calls it after writing each chunk.
func SweepNames() {
	names.Lock()
	defer names.Unlock()
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
