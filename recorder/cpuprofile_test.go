package recorder

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/flightrec/flightrec/jfr"
)

// TestUserCPUProfile records with the profile preset (CPU samples on) and
// has the program profile the CPU itself meanwhile, as net/http/pprof's
// /debug/pprof/profile does: the program's profile must start and get its
// samples, and the recording keeps its own.
func TestUserCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.jfr")
	prof, _ := Preset("profile")
	user0, sys0 := processCPU()
	rec, err := Start(WithFile(path), WithSettings(prof))
	if err != nil {
		t.Fatal(err)
	}
	spinSink += spin(200 * time.Millisecond)
	var user bytes.Buffer
	if err := pprof.StartCPUProfile(&user); err != nil {
		rec.Stop()
		t.Fatalf("the program's own CPU profile fails while recording: %v", err)
	}
	spinSink += spin(500 * time.Millisecond)
	pprof.StopCPUProfile()
	spinSink += spin(200 * time.Millisecond)
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	user1, sys1 := processCPU()
	if user.Len() == 0 {
		t.Error("the program's CPU profile is empty")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	samples, inSpin := 0, 0
	var sampler string
	eachEvent(t, data, func(ev *jfr.Event) {
		switch ev.Type.Name {
		case "jdk.ExecutionSample":
			samples++
			st, _ := ev.Field("stackTrace")
			frames, _ := st.Field("frames")
			for _, fr := range frames.Elems() {
				m, _ := fr.Field("method")
				name, _ := m.Field("name")
				if name.Resolve().String() == "spin" {
					inSpin++
					break
				}
			}
		case "jdk.ActiveSetting":
			if n, _ := ev.Field("name"); n.String() == "sampler" {
				v, _ := ev.Field("value")
				sampler = v.String()
			}
		}
	})
	cpu := user1 - user0 + sys1 - sys0
	t.Logf("%d samples, %d in spin, for %v of CPU; sampler: %s", samples, inSpin, cpu, sampler)
	if strings.HasPrefix(sampler, "no CPU samples") {
		t.Skipf("the kernel gives no perf events here: %s", sampler)
	}
	// One sample per 10 ms of a thread's CPU time: the spinning goroutine
	// used most of the process's, on a machine others share.
	if want := int(cpu / (20 * time.Millisecond)); samples < want || inSpin < samples/2 {
		t.Errorf("%d CPU samples, %d of them in spin: want %d or more, mostly in spin", samples, inSpin, want)
	}
	if !strings.HasPrefix(sampler, "perf events") {
		t.Errorf("jdk.ActiveSetting sampler = %q", sampler)
	}
}

// TestDefaultTakesNoSamples checks that the default preset leaves CPU
// sampling off: only the profile preset, or a setting, asks for it.
func TestDefaultTakesNoSamples(t *testing.T) {
	rec, err := Start(WithRing(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	spinSink += spin(100 * time.Millisecond)
	theSession.mu.Lock()
	rt := theSession.runtime
	theSession.mu.Unlock()
	rt.mu.Lock()
	sampler := rt.sampler
	rt.mu.Unlock()
	data := dumped(t, rec)
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	if sampler != nil {
		t.Error("the default preset runs the CPU sampler")
	}
	if n := readEvents(t, data)["jdk.ExecutionSample"]; n != 0 {
		t.Errorf("%d jdk.ExecutionSample events with the default preset", n)
	}
}

// TestNoSamplerSaysWhy checks that a recording whose CPU sampler cannot
// start (as where the kernel refuses perf events) records the rest, and
// says in jdk.ExecutionSample's settings why it has no samples.
func TestNoSamplerSaysWhy(t *testing.T) {
	startCPUSampler = func(time.Duration) (*cpuSampler, error) {
		return nil, errors.New("perf_event_open: permission denied")
	}
	defer func() { startCPUSampler = newCPUSampler }()
	prof, _ := Preset("profile")
	rec, err := Start(WithRing(0, 0), WithSettings(prof))
	if err != nil {
		t.Fatal(err)
	}
	spinSink += spin(50 * time.Millisecond)
	data := dumped(t, rec)
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	var sampler string
	eachEvent(t, data, func(ev *jfr.Event) {
		if n, _ := ev.Field("name"); ev.Type.Name == "jdk.ActiveSetting" && n.String() == "sampler" {
			v, _ := ev.Field("value")
			sampler = v.String()
		}
	})
	if want := "no CPU samples: perf_event_open: permission denied"; sampler != want {
		t.Errorf("sampler setting %q, want %q", sampler, want)
	}
	if n := readEvents(t, data)["jdk.ActiveRecording"]; n == 0 {
		t.Error("nothing else recorded")
	}
}

// TestSamplerSettingWhileRuntimeBusy holds the runtime events' lock over
// the first flushes of a recording, as a preempted runtime goroutine
// does: the flushes that leave the runtime events for later must not
// write the settings without the sampler's state (CI's Go 1.25 step saw
// TestUserCPUProfile find no "sampler" setting).
func TestSamplerSettingWhileRuntimeBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.jfr")
	prof, _ := Preset("profile")
	rec, err := Start(WithFile(path), WithSettings(prof))
	if err != nil {
		t.Fatal(err)
	}
	theSession.mu.Lock()
	rt := theSession.runtime
	theSession.mu.Unlock()
	rt.mu.Lock()
	spinSink += spin(2500 * time.Millisecond) // two periodic flushes
	rt.mu.Unlock()
	spinSink += spin(200 * time.Millisecond)
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sampler []string
	eachEvent(t, data, func(ev *jfr.Event) {
		if ev.Type.Name == "jdk.ActiveSetting" {
			if n, _ := ev.Field("name"); n.String() == "sampler" {
				v, _ := ev.Field("value")
				sampler = append(sampler, v.String())
			}
		}
	})
	if len(sampler) == 0 || sampler[0] == "" {
		t.Errorf("sampler settings %q, want the sampler's state", sampler)
	}
}
