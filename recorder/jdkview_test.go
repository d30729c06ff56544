package recorder

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// jfr25 returns the `jfr` tool of a JDK 21 or later (the first with `jfr
// view`), Temurin 25 where installed.
func jfr25(t *testing.T) string {
	t.Helper()
	found, _ := filepath.Glob("/usr/lib/jvm/*25*/bin/jfr")
	if len(found) == 0 {
		t.Skip("no JDK 25 jfr (for jfr view) under /usr/lib/jvm")
	}
	return found[0]
}

// TestJDKViews runs `jfr view` of JDK 25 on a recording of ours: the views
// join on JDK event types (jdk.OldGarbageCollection, jdk.Shutdown...)
// that must be declared even when no event of them is written, and read
// fields by name and annotation.
func TestJDKViews(t *testing.T) {
	jfrBin := jfr25(t)
	path := filepath.Join(t.TempDir(), "views.jfr")
	prof, _ := Preset("profile")
	rec, err := Start(WithFile(path), WithSettings(prof))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		runtime.GC()
		spinSink += spin(300 * time.Millisecond)
	}
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	checkSummary(t, path)
	// Each view with a line its output must have: a value computed from our
	// events, not only the headings.
	views := []struct{ name, want string }{
		{"gc", "Unknown"},                   // GC and heap events by gcId; no Young/Old type
		{"recording", "Event Count: "},      // joins jdk.Shutdown
		{"hot-methods", "recorder.spin()"},  // ExecutionSample's top frames
		{"gc-pauses", "Number of Pauses: "}, // GCPhasePause durations
		{"cpu-load", "JVM User (Average): "},
		{"thread-count", "Active Threads"},
		{"active-recordings", "flightrec"},
		{"events-by-count", "Method Profiling Sample"},
	}
	sampled := samplesExpected(t)
	for _, v := range views {
		if !sampled && (v.name == "hot-methods" || v.name == "events-by-count") {
			continue // both show CPU samples
		}
		out, err := exec.Command(jfrBin, "view", "--width", "200", v.name, path).CombinedOutput()
		if err != nil || !strings.Contains(string(out), v.want) || viewError.Match(out) {
			t.Errorf("jfr view %s: %v\n%s", v.name, err, out)
			continue
		}
		t.Logf("jfr view %s:\n%s", v.name, out)
	}
}

// viewError matches what jfr view prints when it fails ("Error: ...",
// "jfr view: ..."): not a sampled method's name, as
// io.(*PipeWriter).CloseWithError(), which CI once saw in hot-methods.
var viewError = regexp.MustCompile(`(?mi)^\s*(error|exception|jfr view)\b|rror:`)

// checkSummary checks that OpenJDK 17's `jfr summary` counts as many
// events of each JDK type in the file as our reader.
func checkSummary(t *testing.T, path string) {
	t.Helper()
	jfrBin, err := exec.LookPath("jfr")
	if err != nil {
		t.Log("jfr not installed: summary not checked")
		return
	}
	out, err := exec.Command(jfrBin, "summary", path).CombinedOutput()
	if err != nil {
		t.Fatalf("jfr summary: %v\n%s", err, out)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ours := readEvents(t, data)
	for _, name := range append(append([]string(nil), rawTypeNames...), declaredTypes...) {
		re := regexp.MustCompile(`(?m)^ ` + regexp.QuoteMeta(name) + ` +(\d+) `)
		m := re.FindSubmatch(out)
		if m == nil || string(m[1]) != strconv.Itoa(ours[name]) {
			t.Errorf("jfr summary: %s: %q, our reader counts %d\n%s", name, m, ours[name], out)
		}
	}
}

// TestViewErrorPattern: jfr view's failures are caught, method names with
// "Error" in them are not.
func TestViewErrorPattern(t *testing.T) {
	for text, want := range map[string]bool{
		"jfr view: could not open file x.jfr (No such file or directory)": true,
		"Error: no view named nosuch":                                     true,
		"\n  Exception in thread main":                                    true,
		"io.(*PipeWriter).CloseWithError()        1   1.08%":              false,
		"errors.New()        3   2.00%":                                   false,
	} {
		if got := viewError.MatchString(text); got != want {
			t.Errorf("viewError on %q: %v, want %v", text, got, want)
		}
	}
}
