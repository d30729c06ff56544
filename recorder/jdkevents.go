package recorder

import (
	"github.com/flightrec/flightrec/internal/spec"
	"github.com/flightrec/flightrec/jfr"
)

// The implicit fields of the recorder's own events that the JDK declares
// but flightrec has nothing for: they take place, as the JDK's layout has
// them, and read as 0 and null.
var (
	noDuration = jfr.IntValue(jfr.KindLong, 0)
	noThread   = jfr.RefValue(nil, 0)
	noStack    = jfr.RefValue(nil, 0)
)

// writeRuntime writes the runtime events of the chunk (GC cycles, CPU
// load...) in their JDK layouts, and the enumerations they refer to.
func (cb *chunkBuilder) writeRuntime(p *pools, in chunkInput) {
	if len(in.runtime) == 0 {
		return
	}
	cb.writeEnums(p)
	for _, r := range in.runtime {
		if _, on := in.settings[r.name]; !on || p.err != nil {
			continue
		}
		p.err = p.w.WriteEvent(cb.raw[r.name], r.vals)
	}
}

// writeEnums adds the constants of the JDK enumerations the runtime events
// and the system facts refer to, once per chunk.
func (cb *chunkBuilder) writeEnums(p *pools) {
	for _, e := range []struct {
		class string
		enum  map[uint64]string
	}{{spec.GCName, spec.GCNames}, {spec.GCCause, spec.GCCauses}, {spec.GCWhen, spec.GCWhens}} {
		if p.added[e.class] {
			continue // in the chunk since an earlier flushpoint
		}
		p.added[e.class] = true
		c := cb.md.ClassByName(e.class)
		for k, v := range e.enum {
			if p.err == nil {
				p.err = p.w.AddConstant(c, k, jfr.StringValue(v))
			}
		}
	}
}
