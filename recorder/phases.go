package recorder

import (
	"sync/atomic"
	"time"
)

// flushPhase names a part of the flusher's and the chunk writer's work
// whose longest duration the load benchmarks report, to show where a
// flush stalls.
type flushPhase int

const (
	phasePause       flushPhase = iota // a pause between pinned steps
	phaseTickLate                      // the ticker's flush, from its tick
	phaseDrain                         // gathering the full buffers
	phaseLive                          // copying the buffers being filled
	phasePrepare                       // prepareChunk (the session's lock)
	phaseJobSend                       // handing the flush to the chunk writer
	phaseSpareWait                     // waiting for the other gathering
	phaseEncode                        // the chunk writer's encoding, to delivery
	phaseDeliverLock                   // a recording's lock, at delivery
	phaseFileWrite                     // a file write
	phaseWriteFlush                    // the chunk writer's whole flush
	phaseSettle                        // a sleep before unpinned work
	phaseRawWrite                      // a raw pwrite or ftruncate
	phaseDueLate                       // a flush, from when it was due to its end
	phaseTickDue                       // the ticker's tick, from when the flush was due
	phaseCount
)

var phaseNames = [phaseCount]string{"pause", "tick-late", "drain", "live", "prepare", "job-send", "spare-wait",
	"encode", "deliver-lock", "file-write", "write-flush", "settle", "raw-write", "due-late", "tick-due"}

// phaseMax holds the longest duration of each phase, in nanoseconds, when
// phaseLog is on (benchmarks set it; it costs the flusher a clock read
// per phase).
var (
	phaseLog atomic.Bool
	phaseMax [phaseCount]atomic.Int64
)

// phaseSince records that phase p began at t and ends now. It takes no
// lock: pinned code calls it.
func phaseSince(p flushPhase, t time.Time) {
	if !phaseLog.Load() {
		return
	}
	d := int64(time.Since(t))
	for {
		cur := phaseMax[p].Load()
		if d <= cur || phaseMax[p].CompareAndSwap(cur, d) {
			return
		}
	}
}

// phaseStart returns the time a phase begins, or the zero time when
// phases are not logged.
func phaseStart() time.Time {
	if !phaseLog.Load() {
		return time.Time{}
	}
	return time.Now()
}
