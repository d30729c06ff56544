//go:build !amd64 || purego

package clock

var base = nanotime()

// nominal: a tick is a nanosecond.
const nominal = 1e9

//go:nosplit
func now() int64 { return nanotime() - base }

// GWord is false: NowAndGWord does not read the goroutine here.
const GWord = false

// NowAndGWord returns the current tick and 0.
func NowAndGWord(off uintptr) (int64, uint64) { return Now(), 0 }
