//go:build !amd64 || purego

package clock

// tscAvailable is false: ticks come from nanotime here.
const tscAvailable = false

func invariantTSC() bool { return false }

var monoBase = nanotime()

//go:nosplit
func now() int64 { return nanotime() - monoBase }

// GWord is false: NowAndGWord does not read the goroutine here.
const GWord = false

// NowAndGWord returns the current tick and 0.
func NowAndGWord(off uintptr) (int64, uint64) { return Now(), 0 }
