//go:build amd64 && !purego

package clock

func rdtsc() uint64

var base = rdtsc()

// nominal is 0: the TSC rate must be measured.
const nominal = 0

//go:nosplit
func now() int64 { return int64(rdtsc()-base) >> 2 }

func nowAndGWord(off uintptr) (tsc uint64, word uint64)

// GWord tells whether NowAndGWord reads a word of the current goroutine.
const GWord = true

// NowAndGWord returns the current tick and the word at offset off in the
// current goroutine's runtime.g (its id, for the emit path) in one call,
// which saves the emit path a call. off must lie inside runtime.g.
//
//go:nocheckptr
func NowAndGWord(off uintptr) (int64, uint64) {
	t, w := nowAndGWord(off)
	return int64(t-base) >> 2, w
}
