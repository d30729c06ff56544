package quantity

import (
	"errors"
	"io"
	"testing"

	"github.com/flightrec/flightrec/internal/testrec"
	"github.com/flightrec/flightrec/jfr"
)

func TestQuantities(t *testing.T) {
	r := jfr.NewBytesReader(testrec.Bytes(t, "jdk17-sample.jfr.gz"), nil)
	var ev jfr.Event
	seen := map[string]int{}
	for {
		err := r.ReadEvent(&ev)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := Of(ev.Type, "eventThread"); ok {
			t.Fatalf("%s.eventThread taken for a number", ev.Type.Name)
		}
		if q, ok := Of(ev.Type, "duration"); ok {
			seen["duration"]++
			// Ticks converted with the chunk's clock, as Event.Duration does.
			if q.Unit != Nanoseconds || q.Value(&ev) != int64(ev.Duration()) {
				t.Fatalf("%s duration %d %s, want %d ns", ev.Type.Name, q.Value(&ev), q.Unit, ev.Duration())
			}
		}
		switch ev.Type.Name {
		case "jdk.ObjectAllocationSample":
			q, ok := Of(ev.Type, "weight")
			w, _ := ev.Field("weight")
			if !ok || q.Unit != Bytes || q.Value(&ev) != w.Int() {
				t.Fatalf("weight: %v %s %d, want %d bytes", ok, q.Unit, q.Value(&ev), w.Int())
			}
			seen["weight"]++
		case "jdk.CPULoad":
			q, ok := Of(ev.Type, "machineTotal")
			v, _ := ev.Field("machineTotal")
			if !ok || q.Unit != Count || q.Value(&ev) != int64(v.Float()) {
				t.Fatalf("machineTotal: %v %s %d", ok, q.Unit, q.Value(&ev))
			}
			seen["float"]++
		}
	}
	if seen["duration"] == 0 || seen["weight"] == 0 || seen["float"] == 0 {
		t.Errorf("cases not met: %v", seen)
	}
}
