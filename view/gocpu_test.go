package view

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/flightrec/flightrec/recorder"
)

// TestGoCPUOneThreadFinding checks that the Overview says a Go recording's
// CPU samples sit on one synthetic thread only when they do: without the
// execution tracer (the profile preset with the tracer's types off), and
// not with the profile preset, which puts them on their goroutines.
func TestGoCPUOneThreadFinding(t *testing.T) {
	if testing.Short() {
		t.Skip("records for seconds")
	}
	for _, c := range []struct {
		name   string
		tracer bool
		want   bool
	}{{"profile without the tracer", false, true}, {"profile", true, false}} {
		settings, err := recorder.Preset("profile")
		if err != nil {
			t.Fatal(err)
		}
		if !c.tracer {
			for _, n := range []string{"jdk.JavaMonitorEnter", "jdk.JavaMonitorWait", "jdk.ThreadPark", "jdk.ThreadSleep",
				"jdk.ExecuteVMOperation", "jdk.SafepointBegin", "jdk.SafepointEnd"} {
				settings[n] = recorder.Setting{Enabled: recorder.Bool(false)}
			}
		}
		name := filepath.Join(t.TempDir(), "rec.jfr")
		rec, err := recorder.Start(recorder.WithFile(name), recorder.WithSettings(settings))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { busy(1500 * time.Millisecond) })
		}
		wg.Wait()
		if err := rec.Stop(); err != nil {
			t.Fatal(err)
		}
		ix, err := Open([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		cpu := ix.Type("jdk.ExecutionSample")
		if cpu == nil || cpu.Count == 0 {
			if _, err := os.Stat("/proc/sys/kernel/perf_event_paranoid"); err != nil {
				t.Skip("no CPU samples here: no perf events")
			}
			t.Fatalf("%s: no jdk.ExecutionSample recorded", c.name)
		}
		if got := ix.Findings().GoCPUOneThread; got != c.want {
			t.Errorf("%s (%d samples): goCpuOneThread = %v, want %v", c.name, cpu.Count, got, c.want)
		}
	}
}

var busySink uint64

func busy(d time.Duration) {
	end := time.Now().Add(d)
	x := uint64(1)
	for time.Now().Before(end) {
		for range 10000 {
			x = x*6364136223846793005 + 1
		}
	}
	busySink += x
}
