package gotrace

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/exp/trace"
)

func convertAll(t *testing.T, data []byte, o Options) ([]Event, map[trace.GoID]string) {
	t.Helper()
	var evs []Event
	names := map[trace.GoID]string{}
	c := NewConverter(o)
	err := c.Convert(bytes.NewReader(data), func(g *Generation) error {
		evs = append(evs, g.Events...)
		for k, v := range g.Goroutines {
			names[k] = v
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return evs, names
}

func stackHas(st trace.Stack, fn string) bool {
	for f := range st.Frames() {
		if strings.HasSuffix(f.Func, fn) {
			return true
		}
	}
	return false
}

func TestConvertWorkload(t *testing.T) {
	evs, names := convertAll(t, workloadTrace(t), Options{})
	count := map[string]int{}
	for _, e := range evs {
		d := time.Duration(e.End - e.Start)
		if e.Kind.Blocking() && d < DefaultThreshold {
			t.Errorf("%v of %v below the threshold", e.Kind, d)
		}
		switch e.Kind {
		case MonitorEnter:
			count[e.Class]++
			if e.Other == trace.NoGoroutine || e.Other == e.G {
				t.Errorf("%s wait of goroutine %d: previous owner %d", e.Class, e.G, e.Other)
			}
			if e.Class == "sync.Mutex" && stackHas(e.Stack, "gotrace.lockMutex") {
				count["lockMutex"]++
			}
			if e.Class == "sync.RWMutex" && !stackHas(e.Stack, "gotrace.rlock") {
				t.Errorf("RWMutex wait without rlock on its stack: %v", e.Stack)
			}
		case MonitorWait:
			count["cond"]++
			if e.Class != "sync.Cond" || e.Other == trace.NoGoroutine {
				t.Errorf("cond wait: class %q notifier %d", e.Class, e.Other)
			}
		case ThreadPark:
			count["park "+e.Class]++
		case ThreadSleep:
			count["sleep"]++
		case GarbageCollection:
			count["gc"]++
			if e.Cause == CauseSystemGC {
				count["System.gc()"]++
			}
			if e.SumOfPauses <= 0 || e.LongestPause > e.SumOfPauses || e.SumOfPauses > e.End-e.Start {
				t.Errorf("GC %d: pauses %d, longest %d, cycle %d ns", e.GCID, e.SumOfPauses, e.LongestPause, e.End-e.Start)
			}
		case GCPhasePause:
			count["pause "+e.Name]++
		case VMOperation:
			count["vmop"]++
			if e.Name == "" || e.ID == 0 {
				t.Errorf("VM operation without a reason or id: %+v", e)
			}
		case SafepointBegin:
			count["safepoint"]++
			if e.Threads != int32(runtimeGOMAXPROCS()) {
				t.Errorf("safepoint with %d threads, GOMAXPROCS is %d", e.Threads, runtimeGOMAXPROCS())
			}
		case ExecutionSample:
			count["sample"]++
			if e.G != trace.NoGoroutine && stackHas(e.Stack, "gotrace.burn") {
				count["burn sample"]++
			}
		}
	}
	t.Logf("%v", count)
	// The workload's own waits; the test binary may add some of its own.
	for what, min := range map[string]int{
		"lockMutex": mutexWaits, "sync.RWMutex": rwWaits, "cond": condWaits, "park chan": chanWaits,
		"park sync.WaitGroup": wgWaits, "sleep": sleeps + chanWaits + wgWaits,
		"System.gc()": explicitGCs, "pause GC sweep termination": explicitGCs, "pause GC mark termination": explicitGCs,
		"burn sample": 3,
	} {
		if count[what] < min {
			t.Errorf("%d %s, want at least %d", count[what], what, min)
		}
	}
	if count["safepoint"] != count["vmop"] {
		t.Errorf("%d safepoints for %d VM operations", count["safepoint"], count["vmop"])
	}
	// Short contention is below the threshold: a handful at most.
	if count["sync.Mutex"] > mutexWaits+10 {
		t.Errorf("%d mutex waits: short ones were not filtered", count["sync.Mutex"])
	}
	for g, n := range names {
		if !strings.Contains(n, "#") && !strings.HasPrefix(n, "goroutine ") {
			t.Errorf("goroutine %d named %q", g, n)
		}
	}
}

func runtimeGOMAXPROCS() int { return runtime.GOMAXPROCS(0) }
