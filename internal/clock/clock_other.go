//go:build !amd64 || purego

package clock

var base = nanotime()

// nominal: a tick is a nanosecond.
const nominal = 1e9

//go:nosplit
func now() int64 { return nanotime() - base }
