package flow

import (
	"math"
	"testing"

	"github.com/flightrec/flightrec/internal/flowspec"
	"github.com/flightrec/flightrec/jfr"
)

// TestSourceClassByType: the reader's classes cached by type ID answer
// for the class asked, also when another chunk's metadata gives the ID to
// another class (a flow event type in one chunk, an unrelated one in the
// next) and for IDs past the cache.
func TestSourceClassByType(t *testing.T) {
	long := &jfr.Class{ID: 1, Name: "long"}
	flowClass := func(id int64, name string) *jfr.Class {
		c := &jfr.Class{ID: id, Name: name}
		for _, f := range eventByName[name].Fields {
			c.Fields = append(c.Fields, jfr.Field{Name: f.Name, Type: long})
		}
		return c
	}
	received := flowClass(20, "flightrec.flow.Received")
	other := &jfr.Class{ID: 20, Name: "jdk.ExecutionSample"}
	span := flowClass(21, flowspec.SpanEvent)
	far := flowClass(byTypeMax+5, "flightrec.flow.HandleStart")
	s := newJFRSource("x.jfr", nil, nil, t.TempDir())
	want := map[*jfr.Class]flowspec.Kind{received: flowspec.Received, far: flowspec.HandleStart}
	for range 3 {
		for _, c := range []*jfr.Class{received, span, other, received, far, other, span} {
			jc := s.class(c)
			switch {
			case c == other:
				if jc != nil {
					t.Fatalf("%s (type %d) gave a flow class", c.Name, c.ID)
				}
			case c == span:
				if jc == nil || !jc.isSpan {
					t.Fatalf("%s (type %d) gave %+v", c.Name, c.ID, jc)
				}
			default:
				if jc == nil || jc.isSpan || jc.kind != want[c] {
					t.Fatalf("%s (type %d) gave %+v", c.Name, c.ID, jc)
				}
			}
		}
	}
}

// TestTickNanos: the nanosecond ticks' shortcut gives what the general
// conversion gives, at the ends of the range too.
func TestTickNanos(t *testing.T) {
	general := func(ticks, tps int64) int64 { return ticks/tps*1e9 + ticks%tps*1e9/tps }
	for _, ticks := range []int64{0, 1, -1, 999_999_999, 1e9, 1e9 + 1, -1e9 - 1, 1700000000123456789,
		math.MaxInt64, math.MinInt64, math.MaxInt64 - 1e9 + 1} {
		for _, tps := range []int64{1e9, 1, 1000, 3_000_000_007} {
			if got, want := tickNanos(ticks, tps), general(ticks, tps); got != want {
				t.Errorf("tickNanos(%d, %d) = %d, want %d", ticks, tps, got, want)
			}
		}
	}
}
