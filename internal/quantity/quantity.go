package quantity

import (
	"math"

	"github.com/flightrec/flightrec/jfr"
)

// Unit is the base unit of a field's values.
type Unit string

// The units Of returns.
const (
	Nanoseconds Unit = "nanoseconds"
	Bytes       Unit = "bytes"
	Count       Unit = "count"
)

// Field describes how to read one numeric field.
type Field struct {
	Index int
	Unit  Unit
	scale float64 // multiplier to the base unit; 0 means ticks
}

// Of returns how to read the named field of c as a quantity; ok is false if
// c has no such numeric field.
func Of(c *jfr.Class, name string) (f Field, ok bool) {
	i := c.FieldIndex(name)
	if i < 0 || c.Fields[i].Array || !numeric(c.Fields[i].Type) {
		return Field{}, false
	}
	f = Field{Index: i, Unit: Count, scale: 1}
	if name == "duration" && i == 1 {
		return Field{Index: i, Unit: Nanoseconds}, true
	}
	if a, ok := c.Fields[i].ContentType(); ok {
		switch a.Name() {
		case "jdk.jfr.DataAmount":
			f.Unit = Bytes
			if a.Value() == "BITS" {
				f.scale = 1.0 / 8
			}
		case "jdk.jfr.Timespan":
			f.Unit = Nanoseconds
			switch a.Value() {
			case "TICKS":
				f.scale = 0
			case "MICROSECONDS":
				f.scale = 1e3
			case "MILLISECONDS":
				f.scale = 1e6
			case "SECONDS":
				f.scale = 1e9
			}
		}
	}
	return f, true
}

func numeric(c *jfr.Class) bool {
	if c == nil {
		return false
	}
	switch c.Name {
	case "byte", "short", "int", "long", "float", "double", "char":
		return true
	}
	return false
}

// Value returns the field's value in ev, in f.Unit.
func (f Field) Value(ev *jfr.Event) int64 {
	if f.Index >= len(ev.Fields) {
		return 0
	}
	v := ev.Fields[f.Index]
	if f.scale == 0 {
		return int64(ev.Chunk.Clock().Duration(v.Int()))
	}
	var x float64
	switch v.Kind() {
	case jfr.KindFloat, jfr.KindDouble:
		x = v.Float()
	default:
		if f.scale == 1 {
			return v.Int()
		}
		x = float64(v.Int())
	}
	x *= f.scale
	if math.IsNaN(x) {
		return 0
	}
	return int64(x)
}

// Counters are the gauge series that views draw over time, by event type:
// the fields of periodic events that read as a level, not an amount.
var Counters = map[string][]string{
	"jdk.CPULoad":              {"jvmUser", "jvmSystem", "machineTotal"},
	"jdk.GCHeapSummary":        {"heapUsed"},
	"jdk.JavaThreadStatistics": {"activeCount"},
}
