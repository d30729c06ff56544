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

func TestTicksAt(t *testing.T) {
	tps := TicksPerSecond()
	before := Now()
	at := TicksAt(time.Now().UnixNano())
	after := Now()
	slack := tps / 1000 // the anchor's two reads are not simultaneous
	if at < before-slack || at > after+slack {
		t.Fatalf("TicksAt(now) = %d, clock read %d..%d", at, before, after)
	}
	if d := TicksAt(time.Now().Add(time.Hour).UnixNano()) - TicksAt(time.Now().UnixNano()); d < 3599*tps || d > 3601*tps {
		t.Fatalf("an hour is %d ticks at %d ticks/s", d, tps)
	}
	if d := TicksAt(time.Now().AddDate(-30, 0, 0).UnixNano()) - Now(); d > 0 {
		t.Fatalf("30 years ago is %d ticks ahead", d)
	}
}
