package jfrtool

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/flightrec/flightrec/internal/testrec"
	"github.com/flightrec/flightrec/jfr"
)

// The golden tests run OpenJDK's jfr (17, as CI installs it) on the
// recordings in jfr/testdata and compare its output with ours. They are
// skipped when jfr is not on PATH.

var (
	tmpOnce sync.Once
	tmpDir  string
	tmpErr  error
	unzipMu sync.Mutex
)

// recording returns the path of testdata recording name (without .gz),
// unpacked once per test binary into a directory that is removed by
// TestMain.
func recording(t *testing.T, name string) string {
	t.Helper()
	tmpOnce.Do(func() { tmpDir, tmpErr = os.MkdirTemp("", "jfrtool-test") })
	if tmpErr != nil {
		t.Fatal(tmpErr)
	}
	unzipMu.Lock()
	defer unzipMu.Unlock()
	dst := filepath.Join(tmpDir, name)
	if _, err := os.Stat(dst); err == nil {
		return dst
	}
	if err := os.WriteFile(dst, testrec.Bytes(t, name+".gz"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestMain(m *testing.M) {
	code := m.Run()
	if tmpDir != "" {
		os.RemoveAll(tmpDir)
	}
	os.Exit(code)
}

func printFile(t *testing.T, path string, f Format, opts PrintOptions) []byte {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out bytes.Buffer
	if err := Print(&out, jfr.NewReader(bufio.NewReader(fh), nil), f, opts); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

var numberRE = regexp.MustCompile(`-?[0-9]+(\.[0-9]+)?(E-?[0-9]+)?`)

// sameOutput compares jfr's output with ours: byte for byte, except that
// numbers may differ beyond 6 significant digits (Java 17's
// Double.toString is not shortest for a few values such as 1e23; we print
// the shortest representation, see javaDigits).
func sameOutput(t *testing.T, what string, want, got []byte) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	wl, gl := bytes.Split(want, []byte("\n")), bytes.Split(got, []byte("\n"))
	if len(wl) != len(gl) {
		t.Errorf("%s: %d lines from jfr, %d from us", what, len(wl), len(gl))
	}
	approx := 0
	for i := range min(len(wl), len(gl)) {
		if bytes.Equal(wl[i], gl[i]) {
			continue
		}
		if closeNumbers(wl[i], gl[i]) {
			approx++
			continue
		}
		t.Errorf("%s: line %d differs:\njfr: %q\nus:  %q", what, i+1, wl[i], gl[i])
		return
	}
	t.Logf("%s: %d lines differ only in the last digits of numbers", what, approx)
}

func closeNumbers(a, b []byte) bool {
	if !bytes.Equal(numberRE.ReplaceAll(a, []byte("#")), numberRE.ReplaceAll(b, []byte("#"))) {
		return false
	}
	na, nb := numberRE.FindAll(a, -1), numberRE.FindAll(b, -1)
	if len(na) != len(nb) {
		return false
	}
	for i := range na {
		x, err1 := strconv.ParseFloat(string(na[i]), 64)
		y, err2 := strconv.ParseFloat(string(nb[i]), 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if x != y && math.Abs(x-y) > 1e-6*math.Max(math.Abs(x), math.Abs(y)) {
			return false
		}
	}
	return true
}

type goldenCase struct {
	file string
	json bool
	opts PrintOptions
}

func (c goldenCase) args() []string {
	var a []string
	if c.json {
		a = append(a, "--json")
	}
	if c.opts.Events != "" {
		a = append(a, "--events", c.opts.Events)
	}
	if c.opts.Categories != "" {
		a = append(a, "--categories", c.opts.Categories)
	}
	if c.opts.StackDepth != 5 {
		a = append(a, "--stack-depth", strconv.Itoa(c.opts.StackDepth))
	}
	return a
}

func TestPrintGolden(t *testing.T) {
	testrec.JFR(t)
	var cases []goldenCase
	for _, f := range []string{"jdk17-alltypes.jfr", "jdk25-alltypes.jfr"} {
		for _, j := range []bool{false, true} {
			cases = append(cases, goldenCase{file: f, json: j, opts: PrintOptions{StackDepth: 5}})
		}
		cases = append(cases, goldenCase{file: f, opts: PrintOptions{StackDepth: 1, Events: "*Int*,*Long*"}})
	}
	for _, f := range []string{"jdk17-sample.jfr", "jdk17-sample-multichunk.jfr"} {
		for _, j := range []bool{false, true} {
			cases = append(cases,
				goldenCase{file: f, json: j, opts: PrintOptions{StackDepth: 5, Events: "CPULoad,jdk.GCHeapSummary,Thread*,OldObjectSample,G1?asicIHOP"}},
				goldenCase{file: f, json: j, opts: PrintOptions{StackDepth: 0, Events: "ExecutionSample"}},
				goldenCase{file: f, json: j, opts: PrintOptions{StackDepth: 64, Events: "ExecutionSample,JavaMonitorEnter"}},
				goldenCase{file: f, json: j, opts: PrintOptions{StackDepth: 2, Categories: "GC,Flight Recorder", Events: "ModuleExport"}},
				goldenCase{file: f, json: j, opts: PrintOptions{StackDepth: 3, Categories: "JVM"}},
			)
		}
	}
	for _, c := range cases {
		name := c.file + "/" + filepath.Join(c.args()...)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := recording(t, c.file)
			format := FormatPretty
			if c.json {
				format = FormatJSON
			}
			got := printFile(t, path, format, c.opts)
			want := testrec.RunJFR(t, append(append([]string{"print"}, c.args()...), path)...)
			sameOutput(t, name, want, got)
		})
	}
}

func TestMetadataGolden(t *testing.T) {
	testrec.JFR(t)
	for _, c := range []struct{ file, events string }{
		{"jdk17-alltypes.jfr", ""},
		{"jdk25-alltypes.jfr", ""},
		{"jdk17-sample-multichunk.jfr", ""},
		{"jdk17-sample.jfr", "jdk.GC*,CPULoad"},
	} {
		t.Run(c.file+"/"+c.events, func(t *testing.T) {
			t.Parallel()
			path := recording(t, c.file)
			args := []string{"metadata"}
			if c.events != "" {
				args = append(args, "--events", c.events)
			}
			want := testrec.RunJFR(t, append(args, path)...)
			fh, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			var got bytes.Buffer
			if err := PrintMetadata(&got, jfr.NewReader(bufio.NewReader(fh), nil), MetadataOptions{Events: c.events}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(want, got.Bytes()) {
				sameOutput(t, "metadata", want, got.Bytes())
				t.Error("metadata differs")
			}
		})
	}
}

// chunkEnds returns the file offset where each chunk ends.
func chunkEnds(t *testing.T, data []byte) []int64 {
	var ends []int64
	for off := int64(0); off+jfr.HeaderSize <= int64(len(data)); {
		size := int64(binary.BigEndian.Uint64(data[off+8:]))
		if size <= 0 {
			t.Fatalf("bad chunk size at %d", off)
		}
		off += size
		ends = append(ends, off)
	}
	return ends
}

// TestPrintTruncated checks that a recording cut inside its last chunk
// prints the complete chunks, exactly as the same file cut at the chunk
// boundary does, then reports the chunk and offset.
func TestPrintTruncated(t *testing.T) {
	data, err := os.ReadFile(recording(t, "jdk17-alltypes.jfr"))
	if err != nil {
		t.Fatal(err)
	}
	ends := chunkEnds(t, data)
	if len(ends) < 3 {
		t.Fatalf("want 3 chunks, have %d", len(ends))
	}
	cut := ends[1] + (ends[2]-ends[1])/2
	for _, f := range []Format{FormatJSON, FormatPretty} {
		var whole, trunc bytes.Buffer
		opts := PrintOptions{StackDepth: 5}
		if err := Print(&whole, jfr.NewReader(bytes.NewReader(data[:ends[1]]), nil), f, opts); err != nil {
			t.Fatalf("two complete chunks: %v", err)
		}
		err := Print(&trunc, jfr.NewReader(bytes.NewReader(data[:cut]), nil), f, opts)
		var fe *jfr.FormatError
		if !errors.As(err, &fe) {
			t.Fatalf("format %d: got error %v, want a FormatError", f, err)
		}
		if fe.Chunk != 2 || fe.Offset < ends[1] || fe.Offset > cut {
			t.Errorf("error at chunk %d offset %d, want chunk 2 within [%d, %d]", fe.Chunk, fe.Offset, ends[1], cut)
		}
		if !bytes.Equal(whole.Bytes(), trunc.Bytes()) {
			t.Errorf("format %d: output of the truncated file (%d bytes) differs from the complete chunks' (%d bytes)", f, trunc.Len(), whole.Len())
		}
		if whole.Len() < 1000 {
			t.Errorf("format %d: only %d bytes for two chunks", f, whole.Len())
		}
	}
}

// TestPrintCorrupt feeds damaged recordings: no panic, and an error.
func TestPrintCorrupt(t *testing.T) {
	data, err := os.ReadFile(recording(t, "jdk17-alltypes.jfr"))
	if err != nil {
		t.Fatal(err)
	}
	data = data[:min(len(data), 400_000)]
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"not jfr", []byte("hello, world, this is not a recording at all......................................")},
		{"header only", data[:jfr.HeaderSize]},
		{"cut", data[:200_000]},
	} {
		for _, f := range []Format{FormatJSON, FormatPretty} {
			if err := Print(io.Discard, jfr.NewReader(bytes.NewReader(c.b), nil), f, PrintOptions{StackDepth: 5}); err == nil {
				t.Errorf("%s: no error", c.name)
			}
		}
	}
	// Flip bytes through the first chunk; any error is fine, a panic is not.
	for i := 100; i < len(data); i += 7919 {
		b := bytes.Clone(data)
		b[i] ^= 0xff
		Print(io.Discard, jfr.NewReader(bytes.NewReader(b), nil), FormatJSON, PrintOptions{StackDepth: 5})
		Print(io.Discard, jfr.NewReader(bytes.NewReader(b), nil), FormatPretty, PrintOptions{StackDepth: 5})
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"CPU*", "CPULoad", true},
		{"CPULoa?", "CPULoad", true},
		{"cpuload", "CPULoad", false},
		{"*", "", true},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY", false},
		{"?", "", false},
	} {
		if got := glob(c.p, c.s); got != c.want {
			t.Errorf("glob(%q, %q) = %v", c.p, c.s, got)
		}
	}
	if acronym("Java Virtual Machine") != "JVM" {
		t.Error("acronym")
	}
}

func TestPrintAllocs(t *testing.T) {
	data, err := os.ReadFile(recording(t, "jdk17-alltypes.jfr"))
	if err != nil {
		t.Fatal(err)
	}
	// Allocations must not grow with the number of events: a file and
	// the same file with its chunks printed twice over (by reading it
	// twice) differ only by per-chunk setup.
	measure := func(n int) float64 {
		return testing.AllocsPerRun(2, func() {
			for range n {
				Print(io.Discard, jfr.NewReader(bytes.NewReader(data), nil), FormatJSON, PrintOptions{StackDepth: 5})
			}
		})
	}
	one := measure(1)
	var ev int
	r := jfr.NewReader(bytes.NewReader(data), nil)
	var e jfr.Event
	for r.ReadEvent(&e) == nil {
		ev++
	}
	if one > float64(ev)/2 {
		t.Errorf("%.0f allocations for %d events", one, ev)
	}
	t.Logf("%.0f allocations for %d events", one, ev)
}
