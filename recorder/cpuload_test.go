package recorder

import (
	"testing"
	"time"

	"github.com/flightrec/flightrec/jfr"
)

// TestCPULoad checks jdk.CPULoad's values: fractions of the machine, the
// machine at least as busy as the process.
func TestCPULoad(t *testing.T) {
	rec, err := Start(WithRing(0, 0), WithSettings(Settings{"jdk.CPULoad": {Period: Duration(20 * time.Millisecond)}}))
	if err != nil {
		t.Fatal(err)
	}
	spinSink += spin(300 * time.Millisecond)
	data := dumped(t, rec)
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	n := 0
	eachEvent(t, data, func(ev *jfr.Event) {
		if ev.Type.Name != "jdk.CPULoad" {
			return
		}
		n++
		var v [3]float64
		for i, name := range []string{"jvmUser", "jvmSystem", "machineTotal"} {
			f, _ := ev.Field(name)
			v[i] = f.Float()
			if v[i] < 0 || v[i] > 1.01 {
				t.Errorf("%s = %v, not a fraction", name, v[i])
			}
		}
		if v[2] < float64(float32(v[0]+v[1]))-1e-6 {
			t.Errorf("machineTotal %v below the process's %v + %v", v[2], v[0], v[1])
		}
	})
	if n < 5 {
		t.Errorf("%d jdk.CPULoad events in 300 ms at a 20 ms period", n)
	}
}
