package gotrace

import (
	"math"

	"golang.org/x/exp/trace"

	"github.com/flightrec/flightrec/internal/spec"
	"github.com/flightrec/flightrec/jfr"
)

// Refs gives the constant-pool references of the recording an event is
// written into. The enumerations (GC name and cause, thread state) are
// referred to by their spec keys, which the writer's pools must hold.
type Refs interface {
	Thread(g trace.GoID) jfr.Value // null for trace.NoGoroutine
	// SampledThread is the thread of a CPU sample: g, or a thread standing
	// for the runtime for trace.NoGoroutine.
	SampledThread(g trace.GoID) jfr.Value
	Stack(st trace.Stack) jfr.Value
	Class(name string) jfr.Value // null for ""
	Operation(name string) jfr.Value
}

// AppendValues appends the field values of e in the JDK 17 layout of its
// type (spec.JDKEvent), or the go.* type's, with start and duration in the
// recording's ticks. Every writer of converted events goes through it, so
// they write the same fields.
func AppendValues(v []jfr.Value, e *Event, start, duration int64, r Refs) []jfr.Value {
	long := func(n int64) jfr.Value { return jfr.IntValue(jfr.KindLong, n) }
	ticks, dur := long(start), long(duration)
	switch e.Kind {
	case MonitorEnter:
		// The tracer does not say which lock: address 0, never invented.
		v = append(v, ticks, dur, r.Thread(e.G), r.Stack(e.Stack), r.Class(e.Class), r.Thread(e.Other), long(0))
	case MonitorWait:
		// A sync.Cond wait has no timeout: 0, as Object.wait() in Java.
		v = append(v, ticks, dur, r.Thread(e.G), r.Stack(e.Stack), r.Class(e.Class), r.Thread(e.Other),
			long(0), jfr.BoolValue(false), long(0))
	case ThreadPark:
		// The tracer does not record timeouts: the JDK's value for none.
		v = append(v, ticks, dur, r.Thread(e.G), r.Stack(e.Stack), r.Class(e.Class), long(math.MinInt64), long(math.MinInt64), long(0))
	case ThreadSleep:
		v = append(v, ticks, dur, r.Thread(e.G), r.Stack(e.Stack), long((e.End-e.Start)/1e6))
	case VMOperation:
		v = append(v, ticks, dur, r.Thread(e.G), r.Operation(e.Name), jfr.BoolValue(true), jfr.BoolValue(true),
			r.Thread(e.Other), long(int64(e.ID)))
	case SafepointBegin:
		v = append(v, ticks, dur, r.Thread(e.G), long(int64(e.ID)), jfr.IntValue(jfr.KindInt, int64(e.Threads)), jfr.IntValue(jfr.KindInt, 0))
	case SafepointEnd:
		v = append(v, ticks, dur, r.Thread(e.G), long(int64(e.ID)))
	case GarbageCollection:
		v = append(v, ticks, dur, jfr.IntValue(jfr.KindInt, int64(e.GCID)), jfr.RefValue(nil, spec.GCNameGo),
			jfr.RefValue(nil, e.Cause), long(e.SumOfPauses), long(e.LongestPause))
	case GCPhasePause:
		v = append(v, ticks, dur, r.Thread(e.G), jfr.IntValue(jfr.KindInt, int64(e.GCID)), jfr.StringValue(e.Name))
	case ExecutionSample:
		v = append(v, ticks, r.SampledThread(e.G), r.Stack(e.Stack), jfr.RefValue(nil, spec.StateRunnable))
	case MarkAssist, NetworkWait:
		v = append(v, ticks, dur, r.Thread(e.G), r.Stack(e.Stack))
	}
	return v
}
