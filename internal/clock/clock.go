package clock

import (
	"os"
	"sync"
	"sync/atomic"
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

// Calibration relates ticks to wall time as a chunk header records it:
// tick Ticks happened at UnixNanos, and ticks advance TicksPerSecond a
// second.
type Calibration struct {
	Anchor
	TicksPerSecond int64
}

// Now returns the current tick.
//
//go:nosplit
func Now() int64 { return now() }

// Source names the tick source: "tsc" (the time-stamp counter) or "mono"
// (runtime.nanotime). See the package documentation for how it is chosen.
func Source() string {
	if tsc {
		return "tsc"
	}
	return "mono"
}

// EnvClock is the environment variable that chooses the tick source:
// "mono" turns the time-stamp counter off.
const EnvClock = "FLIGHTREC_CLOCK"

// useTSC tells whether to read the time-stamp counter: where it is
// readable and invariant (it ticks at one rate in every power state and
// on every core), unless the environment turns it off.
func useTSC(env string, available, invariant bool) bool {
	return available && invariant && env != "mono"
}

// tsc is the tick source, chosen once before the first tick is read: a
// recording's ticks all come from one clock.
var tsc = useTSC(os.Getenv(EnvClock), tscAvailable, invariantTSC())

// Epoch returns the anchor of the latest calibration: recordings convert
// ticks to wall time with it, and TicksAt the other way.
func Epoch() Anchor { return calibration().Anchor }

// TicksPerSecond returns the tick frequency of the latest calibration.
// The first call measures it against runtime.nanotime over the time since
// the process started, sleeping if that is shorter than 100 ms;
// Recalibrate measures it again.
func TicksPerSecond() int64 { return calibration().TicksPerSecond }

// TicksAt returns the tick at a wall-clock time given in ns since the Unix
// epoch, through the latest calibration (in range for times within about
// 400 years of now).
func TicksAt(unixNanos int64) int64 {
	c := calibration()
	d := unixNanos - c.UnixNanos
	return c.Ticks + d/1e9*c.TicksPerSecond + d%1e9*c.TicksPerSecond/1e9
}

// Recalibrate reads the tick and the wall clock together, measures the
// tick rate again over the process's lifetime (the longer it ran, the
// more precise), and makes the result the calibration Epoch,
// TicksPerSecond and TicksAt use. The recorder calls it at every chunk
// start, so that each chunk header follows the wall clock: one anchor
// for the whole process drifts from it (a rate error of 1e-5 is 0.9 s a
// day), and the wall clock itself is adjusted by NTP.
func Recalibrate() Calibration {
	calibration() // the first measurement waits for its window
	c := measure()
	current.Store(c)
	return *c
}

// NewAnchor reads the tick and the wall clock together: the wall clock
// between two ticks, three times, keeping the closest pair (a preemption
// between the reads would skew the anchor).
func NewAnchor() Anchor {
	var best Anchor
	gap := int64(-1)
	for range 3 {
		t0 := Now()
		w := wallNanos()
		t1 := Now()
		if gap < 0 || t1-t0 < gap {
			best, gap = Anchor{Ticks: t0 + (t1-t0)/2, UnixNanos: w}, t1-t0
		}
	}
	return best
}

// wallNanos reads the wall clock; tests replace it to make it drift.
var wallNanos = func() int64 { return time.Now().UnixNano() }

var (
	current  atomic.Pointer[Calibration]
	initOnce sync.Once
	start    struct{ ticks, nanos int64 }
)

// The first reading comes after every package variable is set: the
// assembly reads tsc and base, which the compiler's ordering of
// initialisers does not see.
func init() { start.ticks, start.nanos = Now(), nanotime() }

// calibration returns the latest calibration, measuring the first.
func calibration() *Calibration {
	if c := current.Load(); c != nil {
		return c
	}
	initOnce.Do(func() { current.Store(measure()) })
	return current.Load()
}

// calibrationWindow is the shortest time the tick rate is measured over:
// nanotime is precise to about a microsecond in a VM, so 100 ms gives an
// error of about 1e-5.
const calibrationWindow = 100 * time.Millisecond

// measure reads an anchor and the tick rate since the process started.
func measure() *Calibration {
	if !tsc {
		return &Calibration{Anchor: NewAnchor(), TicksPerSecond: 1e9} // a tick is a nanosecond
	}
	if d := time.Duration(nanotime() - start.nanos); d < calibrationWindow {
		time.Sleep(calibrationWindow - d)
	}
	a, n := NewAnchor(), nanotime()
	return &Calibration{Anchor: a, TicksPerSecond: int64(float64(a.Ticks-start.ticks) * 1e9 / float64(n-start.nanos))}
}
