package recorder

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flightrec/flightrec/jfr"
)

// fact is an event's fields, strings, pool references resolved.
type fact map[string]any

// recordFacts records briefly to a file with opts (on top of the preset
// default) and returns the events of the fact types, by type.
func recordFacts(t *testing.T, opts ...Option) map[string][]fact {
	t.Helper()
	facts, _ := recordFactsFile(t, opts...)
	return facts
}

// recordFactsFile is recordFacts, and the file's path.
func recordFactsFile(t *testing.T, opts ...Option) (map[string][]fact, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "facts.jfr")
	rec, err := Start(append([]Option{WithFile(path)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return factsOf(t, data), path
}

func factsOf(t *testing.T, data []byte) map[string][]fact {
	t.Helper()
	out := map[string][]fact{}
	eachEvent(t, data, func(ev *jfr.Event) {
		if !slices.Contains(factTypeNames, ev.Type.Name) {
			return
		}
		f := fact{}
		for _, fd := range ev.Type.Fields {
			v, _ := ev.Field(fd.Name)
			switch v = v.Resolve(); v.Kind() {
			case jfr.KindString, jfr.KindNull:
				f[fd.Name] = v.String()
			case jfr.KindFloat, jfr.KindDouble:
				f[fd.Name] = v.Float()
			case jfr.KindBool:
				f[fd.Name] = v.Bool()
			default:
				f[fd.Name] = v.Int()
			}
		}
		out[ev.Type.Name] = append(out[ev.Type.Name], f)
	})
	return out
}

// TestJVMInformation checks that jdk.JVMInformation holds the Go
// runtime's real values: its version (never a Java-style one), os.Args,
// the pid, and GOGC, GOMEMLIMIT and GOMAXPROCS as the runtime applies them.
func TestJVMInformation(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(137))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(3 << 30))
	facts := recordFacts(t)
	infos := facts["jdk.JVMInformation"]
	if len(infos) != 1 {
		t.Fatalf("%d jdk.JVMInformation events, want 1 (one chunk)", len(infos))
	}
	info := infos[0]
	if v := info["jvmVersion"]; v != runtime.Version() {
		t.Errorf("jvmVersion %q, want runtime.Version() %q", v, runtime.Version())
	}
	// JMC and other tools take a version starting with a digit, or
	// with 1.x, for Java's.
	if v, _ := info["jvmVersion"].(string); regexp.MustCompile(`^(\d|1\.\d)`).MatchString(v) || !strings.Contains(v, "go") {
		t.Errorf("jvmVersion %q reads as a Java version", v)
	}
	if n, _ := info["jvmName"].(string); !strings.HasPrefix(n, "Go") {
		t.Errorf("jvmName %q, want the Go runtime's", n)
	}
	if a := info["javaArguments"]; a != strings.Join(os.Args, " ") {
		t.Errorf("javaArguments %q, want os.Args %q", a, strings.Join(os.Args, " "))
	}
	if p := info["pid"]; p != int64(os.Getpid()) {
		t.Errorf("pid %v, want %d", p, os.Getpid())
	}
	want := "GOGC=137 GOMEMLIMIT=3221225472 GOMAXPROCS=" + strconv.Itoa(runtime.GOMAXPROCS(0)) + " GODEBUG=" + os.Getenv("GODEBUG")
	if f := info["jvmFlags"]; f != want {
		t.Errorf("jvmFlags %q, want %q", f, want)
	}
	// The process started before the package was initialised, and not
	// long before (the test binary starts in well under a minute).
	start := time.UnixMilli(info["jvmStartTime"].(int64))
	if start.After(startedAt) || start.Before(startedAt.Add(-time.Minute)) {
		t.Errorf("jvmStartTime %v, package initialised at %v", start, startedAt)
	}
	heap := facts["jdk.GCHeapConfiguration"]
	if len(heap) != 1 || heap[0]["maxSize"] != int64(3<<30) || heap[0]["minSize"] != int64(4<<20*137/100) {
		t.Errorf("jdk.GCHeapConfiguration %v, want maxSize GOMEMLIMIT 3 GiB, minSize 4 MiB*137%%", heap)
	}
	gc := facts["jdk.GCConfiguration"]
	if len(gc) != 1 || gc[0]["parallelGCThreads"] != int64(runtime.GOMAXPROCS(0)) || gc[0]["oldCollector"] != "Go" ||
		gc[0]["youngCollector"] != "N/A" || gc[0]["pauseTarget"] != int64(math.MinInt64) {
		t.Errorf("jdk.GCConfiguration %v", gc)
	}
}

// TestGOGCOff checks that GOGC=off reads as in the environment.
func TestGOGCOff(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	info := recordFacts(t)["jdk.JVMInformation"]
	if len(info) != 1 || !strings.HasPrefix(info[0]["jvmFlags"].(string), "GOGC=off ") {
		t.Errorf("jdk.JVMInformation %v, want GOGC=off", info)
	}
}

// TestEnvironmentRedaction checks jdk.InitialEnvironmentVariable: one
// event per variable with its value, values of credential-like names
// redacted by default, the patterns replaced by WithEnvRedaction, and
// none when the type is disabled.
func TestEnvironmentRedaction(t *testing.T) {
	t.Setenv("FLIGHTREC_TEST_API_TOKEN", "hunter2")
	t.Setenv("FLIGHTREC_TEST_PLAIN", "visible")
	env := func(opts ...Option) map[string]string {
		t.Helper()
		m := map[string]string{}
		for _, f := range recordFacts(t, opts...)["jdk.InitialEnvironmentVariable"] {
			k := f["key"].(string)
			if _, dup := m[k]; dup {
				t.Errorf("%s written twice", k)
			}
			m[k] = f["value"].(string)
		}
		return m
	}
	got := env()
	if len(got) != len(os.Environ()) {
		t.Errorf("%d variables, os.Environ has %d", len(got), len(os.Environ()))
	}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if redacted(k, DefaultEnvRedaction) {
			v = RedactedValue
		}
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
	if got["FLIGHTREC_TEST_API_TOKEN"] != RedactedValue || got["FLIGHTREC_TEST_PLAIN"] != "visible" {
		t.Errorf("default redaction: token %q, plain %q", got["FLIGHTREC_TEST_API_TOKEN"], got["FLIGHTREC_TEST_PLAIN"])
	}
	got = env(WithEnvRedaction())
	if got["FLIGHTREC_TEST_API_TOKEN"] != "hunter2" || got["FLIGHTREC_TEST_PLAIN"] != "visible" {
		t.Errorf("no redaction: token %q, plain %q", got["FLIGHTREC_TEST_API_TOKEN"], got["FLIGHTREC_TEST_PLAIN"])
	}
	got = env(WithEnvRedaction("flightrec_test_pl*"))
	if got["FLIGHTREC_TEST_API_TOKEN"] != "hunter2" || got["FLIGHTREC_TEST_PLAIN"] != RedactedValue {
		t.Errorf("redacting FLIGHTREC_TEST_PL*: token %q, plain %q", got["FLIGHTREC_TEST_API_TOKEN"], got["FLIGHTREC_TEST_PLAIN"])
	}
	if got := env(WithSettings(Settings{"jdk.InitialEnvironmentVariable": {Enabled: Bool(false)}})); len(got) != 0 {
		t.Errorf("disabled: %d variables written", len(got))
	}
	if _, err := Start(WithRing(0, 0), WithEnvRedaction("[")); err == nil || !strings.Contains(err.Error(), `pattern "["`) {
		t.Errorf("a malformed pattern: %v, want an error naming it", err)
	}
}

// TestActiveSettingsOfProducedTypes checks that jdk.ActiveSetting speaks
// only of types flightrec writes: those declared for readers that join
// on them (jdk.OldGarbageCollection...) get none, and the facts say when
// they are written.
func TestActiveSettingsOfProducedTypes(t *testing.T) {
	rec, err := Start(WithRing(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	data := dumped(t, rec)
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	c, err := jfr.NewBytesReader(data, nil).NextChunk()
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]map[string]string{}
	eachEvent(t, data, func(ev *jfr.Event) {
		if ev.Type.Name != "jdk.ActiveSetting" {
			return
		}
		id, _ := ev.Field("id")
		name, _ := ev.Field("name")
		val, _ := ev.Field("value")
		typ := c.Metadata.Class(id.Int())
		if typ == nil {
			t.Fatalf("jdk.ActiveSetting of type id %d, not declared", id.Int())
		}
		if settings[typ.Name] == nil {
			settings[typ.Name] = map[string]string{}
		}
		settings[typ.Name][name.String()] = val.String()
	})
	for _, name := range declaredTypes {
		if c.Metadata.ClassByName(name) == nil {
			t.Errorf("%s not declared", name)
		}
		if s, ok := settings[name]; ok {
			t.Errorf("%s, never written, has settings %v", name, s)
		}
	}
	for _, name := range factTypeNames {
		if s := settings[name]; s["enabled"] != "true" || s["period"] != factPeriods[name] {
			t.Errorf("%s: settings %v, want enabled, period %s", name, s, factPeriods[name])
		}
	}
	if len(settings) < len(rawTypeNames) {
		t.Errorf("settings of %d types, want at least the %d the recorder writes", len(settings), len(rawTypeNames))
	}
}

// TestFactsDisabled checks that disabling the fact types leaves them all
// out.
func TestFactsDisabled(t *testing.T) {
	off := Settings{}
	for _, name := range factTypeNames {
		off[name] = Setting{Enabled: Bool(false)}
	}
	if facts := recordFacts(t, WithSettings(off)); len(facts) != 0 {
		t.Errorf("facts written while disabled: %v", facts)
	}
}
