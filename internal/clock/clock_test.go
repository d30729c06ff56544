package clock

import (
	"testing"
	"time"
)

func TestMonotonicAndCalibrated(t *testing.T) {
	tps := TicksPerSecond()
	if tps < 1e6 {
		t.Fatalf("TicksPerSecond = %d", tps)
	}
	a := Now()
	time.Sleep(50 * time.Millisecond)
	b := Now()
	if b <= a {
		t.Fatalf("clock went back: %d then %d", a, b)
	}
	got := time.Duration(float64(b-a) / float64(tps) * 1e9)
	if got < 45*time.Millisecond || got > 500*time.Millisecond {
		t.Fatalf("50 ms sleep measured as %v", got)
	}
}
