package recorder

import (
	"golang.org/x/exp/trace"

	"github.com/flightrec/flightrec/internal/clock"
	"github.com/flightrec/flightrec/internal/gotrace"
	"github.com/flightrec/flightrec/internal/spec"
	"github.com/flightrec/flightrec/jfr"
)

// Stack traces of the execution tracer come as frames, not PCs: they take
// keys from traceStackKeys up, above every key batch.StackID gives (below
// 2^30) and within the 31 bits consumers read keys as.
const (
	traceStackKeys    = 1 << 30
	traceStackKeysEnd = 1<<31 - 1
)

// tracedRefs gives the converted events of a flush their constants in the
// chunk's pools: goroutines as the recorder's threads (the same keys and
// names as the program's events), stacks and classes.
type tracedRefs struct {
	cb     *chunkBuilder
	p      *pools
	ch     *chunkState
	stacks map[trace.Stack]uint64 // of this flush
	stack  bool                   // the type's stackTrace setting
}

func (r *tracedRefs) Thread(g trace.GoID) jfr.Value {
	if g <= 0 {
		return jfr.RefValue(r.p.c[spec.Thread], 0)
	}
	if isNew(r.ch.threads, uint64(g)) {
		r.p.thread(uint64(g))
	}
	return jfr.RefValue(r.p.c[spec.Thread], uint64(g))
}

// SampledThread is only a goroutine: the recorder's converter leaves CPU
// samples to its own sampler.
func (r *tracedRefs) SampledThread(g trace.GoID) jfr.Value { return r.Thread(g) }

func (r *tracedRefs) Stack(st trace.Stack) jfr.Value {
	if !r.stack || st == trace.NoStack {
		return jfr.RefValue(r.p.c[spec.StackTrace], 0)
	}
	k, ok := r.stacks[st]
	if !ok {
		cb, p := r.cb, r.p
		if cb.traceKey < traceStackKeys || cb.traceKey >= traceStackKeysEnd {
			cb.traceKey = traceStackKeys
		}
		k = cb.traceKey
		cb.traceKey++
		r.stacks[st] = k
		fc := p.c[spec.StackFrame]
		var frames []jfr.Value
		for f := range st.Frames() {
			frames = append(frames, jfr.StructValue(fc, jfr.RefValue(p.c[spec.Method], p.method(f.Func)),
				jfr.IntValue(jfr.KindInt, int64(f.Line)), jfr.IntValue(jfr.KindInt, 0), jfr.RefValue(p.c[spec.FrameType], 1)))
		}
		p.add(spec.StackTrace, k, jfr.StructValue(p.c[spec.StackTrace], jfr.BoolValue(len(frames) >= 128), jfr.ArrayValue(fc, frames...)))
	}
	return jfr.RefValue(r.p.c[spec.StackTrace], k)
}

func (r *tracedRefs) Class(name string) jfr.Value {
	if name == "" {
		return jfr.RefValue(r.p.c[spec.Class], 0)
	}
	return jfr.RefValue(r.p.c[spec.Class], r.p.class(name))
}

func (r *tracedRefs) Operation(name string) jfr.Value {
	p := r.p
	c := p.c[spec.VMOperationType]
	if c == nil {
		c = r.cb.md.ClassByName(spec.VMOperationType)
		p.c[spec.VMOperationType] = c
	}
	k := p.intern(spec.VMOperationType, name, func(k uint64) { p.add(spec.VMOperationType, k, jfr.StructValue(c, jfr.StringValue(name))) })
	return jfr.RefValue(c, k)
}

// writeTraced writes the events the execution tracer's converter gave for
// this flush, those of types the settings enable.
func (cb *chunkBuilder) writeTraced(p *pools, ch *chunkState, in chunkInput) {
	if len(in.traced) == 0 {
		return
	}
	cb.writeEnums(p)
	r := &tracedRefs{cb: cb, p: p, ch: ch, stacks: map[trace.Stack]uint64{}}
	tps := float64(cb.ss.tps)
	var vals []jfr.Value
	for i := range in.traced {
		e := &in.traced[i]
		name := e.Kind.String()
		set, on := in.settings[name]
		if !on || p.err != nil {
			continue
		}
		r.stack = set.stack
		dur := int64(float64(e.End-e.Start) * tps / 1e9)
		vals = gotrace.AppendValues(vals[:0], e, clock.TicksAt(e.Start), dur, r)
		if p.err == nil {
			p.err = p.w.WriteEvent(cb.raw[name], vals)
		}
	}
}
