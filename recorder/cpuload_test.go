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
	// At least 300 ms of spinning; more while a loaded machine leaves the
	// periodic loop fewer than 5 turns.
	var data []byte
	for i := 0; i < 20 && (data == nil || readEvents(t, data)["jdk.CPULoad"] < 5); i++ {
		spinSink += spin(300 * time.Millisecond)
		data = dumped(t, rec)
	}
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
		t.Errorf("%d jdk.CPULoad events in 6 s at a 20 ms period", n)
	}
}

// TestCPUFractions checks the clamping of jdk.CPULoad's fractions: a late
// wake-up or clocks that disagree must not make the process use more than
// the machine, or the machine less than the process.
func TestCPUFractions(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		user, sys, wall time.Duration
		busy, total     uint64
		want            [3]float64
	}{
		{20 * ms, 10 * ms, 100 * ms, 30, 100, [3]float64{0.1, 0.05, 0.3}},
		{20 * ms, 10 * ms, 100 * ms, 10, 100, [3]float64{0.1, 0.05, 0.15}}, // machine below the process
		{300 * ms, 100 * ms, 100 * ms, 200, 100, [3]float64{1, 0, 1}},      // more CPU than the period had
		{150 * ms, 100 * ms, 100 * ms, 90, 100, [3]float64{0.75, 0.25, 1}}, // together over the machine
		{10 * ms, 0, 100 * ms, 0, 0, [3]float64{0.05, 0, 0.05}},            // no jiffies yet
	} {
		u, s, m, ok := cpuFractions(c.user, c.sys, c.wall, 2, c.busy, c.total)
		got := [3]float64{u, s, m}
		for i := range got {
			if !ok || got[i] < c.want[i]-1e-9 || got[i] > c.want[i]+1e-9 {
				t.Errorf("cpuFractions(%v, %v, %v, 2, %d, %d) = %v, %v; want %v", c.user, c.sys, c.wall, c.busy, c.total, got, ok, c.want)
				break
			}
		}
	}
	if _, _, _, ok := cpuFractions(ms, ms, 0, 2, 1, 1); ok {
		t.Error("a period of 0 gives fractions")
	}
}
