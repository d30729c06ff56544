package pprof

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/flightrec/flightrec/internal/testrec"
	"github.com/flightrec/flightrec/jfr"
	"github.com/flightrec/flightrec/recorder"
)

// convert exports data and parses the written profile back.
func convert(t *testing.T, data []byte, opts Options) *profile.Profile {
	t.Helper()
	p, err := Convert([]Input{{Name: "in.jfr", Reader: jfr.NewBytesReader(data, &jfr.ReaderOptions{PerChunkClock: true})}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.CheckValid(); err != nil {
		t.Fatal(err)
	}
	return back
}

// events counts the events of one type and sums a field, read directly.
func events(t *testing.T, data []byte, typ, field string) (n, sum int64) {
	t.Helper()
	r := jfr.NewBytesReader(data, nil)
	var ev jfr.Event
	for {
		err := r.ReadEvent(&ev)
		if errors.Is(err, io.EOF) {
			return n, sum
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type.Name == typ {
			n++
			if field != "" {
				v, _ := ev.Field(field)
				sum += v.Int()
			}
		}
	}
}

func total(p *profile.Profile, typ string) int64 {
	i := -1
	for j, st := range p.SampleType {
		if st.Type == typ {
			i = j
		}
	}
	if i < 0 {
		return -1
	}
	var s int64
	for _, smp := range p.Sample {
		s += smp.Value[i]
	}
	return s
}

func funcs(p *profile.Profile) map[string]bool {
	m := map[string]bool{}
	for _, f := range p.Function {
		m[f.Name] = true
	}
	return m
}

func TestJDKExecutionSamples(t *testing.T) {
	data := testrec.Bytes(t, "jdk17-sample.jfr.gz")
	p := convert(t, data, Options{Threads: true})
	n, _ := events(t, data, "jdk.ExecutionSample", "")
	nn, _ := events(t, data, "jdk.NativeMethodSample", "")
	if got := total(p, "samples"); got != n+nn {
		t.Errorf("samples = %d, want %d execution + %d native samples", got, n, nn)
	}
	// Sample.java ran with the profile settings: jfr print --events
	// ActiveSetting gives a period of 10 ms for jdk.ExecutionSample and
	// 20 ms for jdk.NativeMethodSample.
	if p.Period != int64(10*time.Millisecond) || p.PeriodType.Type != "cpu" {
		t.Errorf("period = %d %v, want 10 ms of cpu", p.Period, p.PeriodType)
	}
	if got, want := total(p, "cpu"), n*10e6+nn*20e6; got != want {
		t.Errorf("cpu = %d, want %d (%d samples of 10 ms, %d of 20 ms)", got, want, n, nn)
	}
	fs := funcs(p)
	for _, f := range []string{"java.util.ArrayList.grow", "java.lang.Thread.run", "Sample.lambda$main$0"} {
		if !fs[f] {
			t.Errorf("no function %s", f)
		}
	}
	// Leaf first: the first location of some sample is ArrayList.grow, and
	// Thread.run is never a leaf.
	leafGrow := false
	for _, s := range p.Sample {
		leaf := s.Location[0].Line[0].Function.Name
		leafGrow = leafGrow || leaf == "java.util.ArrayList.grow"
		if leaf == "java.lang.Thread.run" {
			t.Errorf("Thread.run as a leaf: frames are in the wrong order")
		}
		if len(s.Label["thread"]) != 1 || s.Label["thread"][0] == "" {
			t.Errorf("sample without a thread label: %v", s.Label)
		}
	}
	if !leafGrow {
		t.Error("no sample has java.util.ArrayList.grow as its leaf")
	}
}

func TestPeriodFromSettings(t *testing.T) {
	// jdk17-sample sets 20 ms; a recording without settings gets the
	// assumed period and a comment saying so.
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{{"20 ms", 20e6, true}, {"10ms", 10e6, true}, {"1 s", 1e9, true}, {"off", 0, false}, {"everyChunk", 0, false}} {
		got, ok := ParsePeriod(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParsePeriod(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestJDKAllocationSamples(t *testing.T) {
	data := testrec.Bytes(t, "jdk17-sample.jfr.gz")
	p := convert(t, data, Options{Types: []string{"jdk.ObjectAllocationSample"}})
	n, weight := events(t, data, "jdk.ObjectAllocationSample", "weight")
	if got := total(p, "alloc_samples"); got != n {
		t.Errorf("alloc_samples = %d, want %d", got, n)
	}
	if got := total(p, "alloc_space"); got != weight {
		t.Errorf("alloc_space = %d, want the sum of weights %d", got, weight)
	}
	if p.DefaultSampleType != "alloc_space" {
		t.Errorf("default sample type %q", p.DefaultSampleType)
	}
	// The allocated class is the leaf: a class name, not a method.
	leaves := map[string]bool{}
	for _, s := range p.Sample {
		leaves[s.Location[0].Line[0].Function.Name] = true
	}
	if !leaves["java.lang.Object[]"] || !leaves["byte[]"] {
		t.Errorf("no allocated class as a leaf; leaves: %v", leaves)
	}
}

func TestMixedTypesAndWeight(t *testing.T) {
	data := testrec.Bytes(t, "jdk17-sample.jfr.gz")
	p := convert(t, data, Options{Types: []string{"jdk.ExecutionSample", "jdk.ObjectAllocationSample"}, Weight: "weight"})
	var names []string
	for _, st := range p.SampleType {
		names = append(names, st.Type+"/"+st.Unit)
	}
	want := "samples/count cpu/nanoseconds alloc_samples/count alloc_space/bytes weight/bytes"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("sample types %q, want %q", got, want)
	}
	if p.DefaultSampleType != "weight" {
		t.Errorf("default %q", p.DefaultSampleType)
	}
	_, weight := events(t, data, "jdk.ObjectAllocationSample", "weight")
	if got := total(p, "weight"); got != weight {
		t.Errorf("weight = %d, want %d", got, weight)
	}
	for _, s := range p.Sample {
		if len(s.Label["type"]) != 1 {
			t.Fatalf("mixed types without a type label: %v", s.Label)
		}
	}
}

func TestNoMatchingEvents(t *testing.T) {
	data := testrec.Bytes(t, "jdk17-sample.jfr.gz")
	_, err := Convert([]Input{{Name: "x", Reader: jfr.NewBytesReader(data, nil)}}, Options{Types: []string{"no.Such"}})
	if err == nil || !strings.Contains(err.Error(), "jdk.ExecutionSample") {
		t.Errorf("err = %v, want one listing the stack-carrying types", err)
	}
	_, err = Convert([]Input{{Name: "x", Reader: jfr.NewBytesReader(data, nil)}}, Options{Weight: "noSuchField"})
	if err == nil || !strings.Contains(err.Error(), "noSuchField") {
		t.Errorf("err = %v, want one naming the field", err)
	}
}

func TestTruncatedInput(t *testing.T) {
	data := testrec.Bytes(t, "jdk17-sample.jfr.gz")
	_, err := Convert([]Input{{Name: "cut.jfr", Reader: jfr.NewBytesReader(data[:len(data)/2], nil)}}, Options{})
	var fe *jfr.FormatError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "cut.jfr") {
		t.Errorf("err = %v, want a FormatError naming the file", err)
	}
}

//go:noinline
func spinForProfile(d time.Duration) int {
	x := 0
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := range 100000 {
			x += i * i
		}
	}
	return x
}

// TestFlightrecRecordingWithGoToolPprof records Go CPU samples, exports
// them and reads the result with `go tool pprof -top`.
func TestFlightrecRecordingWithGoToolPprof(t *testing.T) {
	if testing.Short() {
		t.Skip("records for a second and builds go tool pprof")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "go.jfr")
	settings, err := recorder.Preset("profile")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := recorder.Start(recorder.WithFile(file), recorder.WithSettings(settings))
	if err != nil {
		t.Fatal(err)
	}
	if spinForProfile(time.Second) == 1 {
		t.Log("unlikely sum")
	}
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	p := convert(t, data, Options{})
	if p.Period != int64(10*time.Millisecond) {
		t.Errorf("period %d, want the profile preset's 10 ms", p.Period)
	}
	const fn = "github.com/flightrec/flightrec/export/pprof.spinForProfile"
	if !funcs(p)[fn] {
		t.Fatalf("no %s among %v", fn, funcs(p))
	}
	out := filepath.Join(dir, "go.pb.gz")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	top := goToolPprof(t, "-top", out)
	if !strings.Contains(top, fn) || !strings.Contains(top, "Type: cpu") {
		t.Errorf("go tool pprof -top:\n%s", top)
	}
}

func TestJDKWithGoToolPprof(t *testing.T) {
	if testing.Short() {
		t.Skip("builds go tool pprof")
	}
	data := testrec.Bytes(t, "jdk17-sample.jfr.gz")
	p := convert(t, data, Options{Types: []string{"jdk.ObjectAllocationSample"}})
	out := filepath.Join(t.TempDir(), "alloc.pb.gz")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	top := goToolPprof(t, "-top", "-sample_index=alloc_space", out)
	if !strings.Contains(top, "Type: alloc_space") || !strings.Contains(top, "java.util.ArrayList.grow") {
		t.Errorf("go tool pprof -top:\n%s", top)
	}
}

func goToolPprof(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"tool", "pprof"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go tool pprof %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}
