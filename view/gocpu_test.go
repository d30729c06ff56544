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
// execution tracer (the default preset with CPU samples on), and
// not with the profile preset, which puts them on their goroutines.
func TestGoCPUOneThreadFinding(t *testing.T) {
	if testing.Short() {
		t.Skip("records for seconds")
	}
	for _, c := range []struct {
		name   string
		tracer bool
		want   bool
	}{{"default with CPU samples", false, true}, {"profile", true, false}} {
		preset := "default"
		if c.tracer {
			preset = "profile"
		}
		settings, err := recorder.Preset(preset)
		if err != nil {
			t.Fatal(err)
		}
		if !c.tracer {
			// CPU samples, as the profile preset takes them, and none
			// of the tracer's types.
			settings["jdk.ExecutionSample"] = recorder.Setting{Enabled: recorder.Bool(true), Period: recorder.Duration(10 * time.Millisecond)}
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
