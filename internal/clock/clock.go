package clock

import (
	"sync"
	"time"
	_ "unsafe" // go:linkname
)

//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Anchor pairs a tick with the wall-clock time it was read at.
type Anchor struct {
	Ticks     int64
	UnixNanos int64
}

// Now returns the current tick.
//
//go:nosplit
func Now() int64 { return now() }

// Epoch returns the process's anchor, read once: recordings convert ticks
// to wall time with it, and TicksAt the other way.
func Epoch() Anchor {
	epochOnce.Do(func() { epoch = NewAnchor() })
	return epoch
}

var (
	epochOnce sync.Once
	epoch     Anchor
)

// TicksAt returns the tick at a wall-clock time given in ns since the Unix
// epoch, through Epoch and TicksPerSecond (in range for times within about
// 400 years of now).
func TicksAt(unixNanos int64) int64 {
	a, tps := Epoch(), TicksPerSecond()
	d := unixNanos - a.UnixNanos
	return a.Ticks + d/1e9*tps + d%1e9*tps/1e9
}

// NewAnchor reads the tick and the wall clock together.
func NewAnchor() Anchor {
	t := Now()
	return Anchor{Ticks: t, UnixNanos: time.Now().UnixNano()}
}

var (
	freqOnce sync.Once
	freq     int64
	start    = struct{ ticks, nanos int64 }{Now(), nanotime()}
)

// calibrationWindow is the shortest time the tick rate is measured over:
// nanotime is precise to about a microsecond in a VM, so 100 ms gives an
// error of about 1e-5.
const calibrationWindow = 100 * time.Millisecond

// TicksPerSecond returns the tick frequency. The first call measures it
// against runtime.nanotime over the time since the process started,
// sleeping if that is shorter than 100 ms; the value is then fixed so every
// chunk of a recording uses one clock (jfr-format.md §1.2).
func TicksPerSecond() int64 {
	freqOnce.Do(func() {
		if nominal > 0 {
			freq = nominal
			return
		}
		if d := time.Duration(nanotime() - start.nanos); d < calibrationWindow {
			time.Sleep(calibrationWindow - d)
		}
		t, n := Now(), nanotime()
		freq = int64(float64(t-start.ticks) * 1e9 / float64(n-start.nanos))
	})
	return freq
}
