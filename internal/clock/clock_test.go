package clock

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/flightrec/flightrec/internal/stack"
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

func TestUseTSC(t *testing.T) {
	for _, c := range []struct {
		env                  string
		available, invariant bool
		want                 bool
	}{
		{"", true, true, true},
		{"tsc", true, true, true},
		{"mono", true, true, false},
		{"", true, false, false},
		{"", false, true, false},
		{"", false, false, false},
	} {
		if got := useTSC(c.env, c.available, c.invariant); got != c.want {
			t.Errorf("useTSC(%q, available %v, invariant %v) = %v, want %v", c.env, c.available, c.invariant, got, c.want)
		}
	}
}

// TestSourceMatchesEnv checks the source this process chose: the TSC only
// where it is invariant and not turned off; nanoseconds otherwise.
func TestSourceMatchesEnv(t *testing.T) {
	want := "mono"
	if useTSC(os.Getenv(EnvClock), tscAvailable, invariantTSC()) {
		want = "tsc"
	}
	if got := Source(); got != want {
		t.Fatalf("Source = %q, want %q (%s=%q, TSC available %v, invariant %v)", got, want, EnvClock, os.Getenv(EnvClock), tscAvailable, invariantTSC())
	}
	if Source() == "mono" && TicksPerSecond() != 1e9 {
		t.Fatalf("the monotonic clock runs at %d ticks/s, want 1e9", TicksPerSecond())
	}
}

// TestMonoSwitch runs this package's clock tests again in a child process
// with the TSC turned off by the environment.
func TestMonoSwitch(t *testing.T) {
	if os.Getenv(EnvClock) == "mono" {
		t.Skip("already the child")
	}
	if !tscAvailable {
		t.Skip("ticks never come from the TSC here")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^(TestSourceMatchesEnv|TestMonotonicAndCalibrated|TestTicksAt|TestRecalibrateFollowsWallClock|TestNowAndGWord)$", "-test.v")
	cmd.Env = append(os.Environ(), EnvClock+"=mono")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("with %s=mono: %v\n%s", EnvClock, err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestSourceMatchesEnv") || !strings.Contains(string(out), "--- PASS: TestNowAndGWord") {
		t.Fatalf("the child did not run the tests:\n%s", out)
	}
}

// TestRecalibrateFollowsWallClock makes the wall clock jump a second ahead
// of the ticks, as an adjusted or drifting clock does over a day: the
// process's first calibration then dates events a second early, and
// Recalibrate catches up.
func TestRecalibrateFollowsWallClock(t *testing.T) {
	tps := TicksPerSecond()
	defer func(f func() int64) { wallNanos = f; Recalibrate() }(wallNanos)
	wallNanos = func() int64 { return time.Now().UnixNano() + 1e9 }
	slack := tps / 20 // generous for emulators (qemu-user)
	if off := Now() + tps - TicksAt(wallNanos()); off > slack || off < -slack {
		t.Fatalf("before Recalibrate, the wall clock's jump is %d ticks off a second", off)
	}
	c := Recalibrate()
	if off := TicksAt(wallNanos()) - Now(); off > slack || off < -slack {
		t.Fatalf("after Recalibrate, now is %d ticks off", off)
	}
	if c.Anchor != Epoch() || c.TicksPerSecond != TicksPerSecond() {
		t.Fatalf("Recalibrate returned %+v, Epoch %+v at %d ticks/s", c, Epoch(), TicksPerSecond())
	}
	if d := c.TicksPerSecond - tps; d > tps/1000 || d < -tps/1000 {
		t.Fatalf("the rate moved from %d to %d ticks/s", tps, c.TicksPerSecond)
	}
}

// TestNowAndGWord reads the goroutine id through NowAndGWord, with the
// TSC and (in TestMonoSwitch's child) without.
func TestNowAndGWord(t *testing.T) {
	if !GWord || !stack.GoidFast {
		t.Skip("NowAndGWord reads no goroutine word here")
	}
	before := Now()
	tick, g := NowAndGWord(stack.GoidOffset())
	after := Now()
	if g != stack.Goid() {
		t.Fatalf("NowAndGWord read goroutine %d, want %d", g, stack.Goid())
	}
	if tick < before || tick > after {
		t.Fatalf("NowAndGWord's tick %d is outside %d..%d", tick, before, after)
	}
}
