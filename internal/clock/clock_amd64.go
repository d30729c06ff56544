//go:build amd64 && !purego

package clock

//lint:ignore U1000 base's initialiser calls it
func rdtsc() uint64

func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)

// tscAvailable: every amd64 CPU has RDTSC.
const tscAvailable = true

// invariantTSC tells whether the CPU reports an invariant TSC (CPUID
// leaf 0x80000007, EDX bit 8): one that ticks at a constant rate whatever
// the power state, so ticks measure time. Hypervisors clear the bit when
// they cannot promise it.
func invariantTSC() bool {
	if maxExt, _, _, _ := cpuid(0x80000000, 0); maxExt < 0x80000007 {
		return false
	}
	_, _, _, edx := cpuid(0x80000007, 0)
	return edx&(1<<8) != 0
}

// The assembly (ticks, nowAndGWord) reads base and monoBase.
var (
	base     = rdtsc()    //lint:ignore U1000 read in assembly
	monoBase = nanotime() //lint:ignore U1000 read in assembly
)

// ticks returns the TSC since base divided by 4 or, where the TSC is off
// (tsc false), jumps to monoTicks: the test is made in assembly so that
// Now, one call either way, still inlines.
func ticks() int64

//go:nosplit
func now() int64 { return ticks() }

// monoTicks is the tick where the TSC is off.
//
//lint:ignore U1000 ticks jumps to it
//go:nosplit
func monoTicks() int64 { return nanotime() - monoBase }

// nowAndGWord is ticks and a word of the current g (see NowAndGWord);
// where the TSC is off it jumps to monoNowAndGWord.
func nowAndGWord(off uintptr) (ticks int64, word uint64)

// gWord returns the word at offset off in the current g.
//
//lint:ignore U1000 monoNowAndGWord calls it
func gWord(off uintptr) uint64

//lint:ignore U1000 nowAndGWord jumps to it
//go:nosplit
func monoNowAndGWord(off uintptr) (int64, uint64) { return monoTicks(), gWord(off) }

// GWord tells whether NowAndGWord reads a word of the current goroutine.
const GWord = true

// NowAndGWord returns the current tick and the word at offset off in the
// current goroutine's runtime.g (its id, for the emit path) in one call,
// which saves the emit path a call. off must lie inside runtime.g.
//
//go:nocheckptr
func NowAndGWord(off uintptr) (int64, uint64) { return nowAndGWord(off) }
