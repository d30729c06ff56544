package gotrace

import (
	"bytes"
	"encoding/json"
	"github.com/flightrec/flightrec/internal/jdklayout"
	"github.com/flightrec/flightrec/internal/jfrstack"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flightrec/flightrec/jfr"
)

// converted is the workload's trace as a recording.
func converted(t *testing.T) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := Convert(bytes.NewReader(workloadTrace(t)), &out, Options{}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func readAll(t *testing.T, data []byte, fn func(ev *jfr.Event)) {
	t.Helper()
	r := jfr.NewBytesReader(data, nil)
	var ev jfr.Event
	for {
		err := r.ReadEvent(&ev)
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		fn(&ev)
	}
}

func field(t *testing.T, v interface {
	Field(string) (jfr.Value, bool)
}, path ...string) jfr.Value {
	t.Helper()
	var cur jfr.Value
	for i, p := range path {
		var ok bool
		if i == 0 {
			cur, ok = v.Field(p)
		} else {
			cur, ok = cur.Field(p)
		}
		if !ok {
			t.Fatalf("no field %s", strings.Join(path[:i+1], "."))
		}
	}
	return cur.Resolve()
}

func framesOf(t *testing.T, ev *jfr.Event) []string {
	st, _ := ev.Field("stackTrace")
	fr, ok := st.Field("frames")
	if !ok {
		return nil
	}
	var out []string
	for _, f := range fr.Elems() {
		m, _ := f.Field("method")
		cl, _ := m.Field("type")
		cn, _ := cl.Field("name")
		n, _ := m.Field("name")
		out = append(out, jfrstack.Text(cn)+"."+jfrstack.Text(n))
	}
	return out
}

// TestRecording reads the converted workload back with our reader: every
// kind of wait with its class and waker, GC cycles with their cause, and
// nothing the honesty rules forbid.
func TestRecording(t *testing.T) {
	data := converted(t)
	count := map[string]int{}
	declared := map[int64]string{}
	readAll(t, data, func(ev *jfr.Event) {
		for _, c := range ev.Chunk.Metadata.EventTypes() {
			declared[c.ID] = c.Name
		}
		name := ev.Type.Name
		count[name]++
		switch name {
		case "jdk.JavaMonitorEnter":
			class := jfrstack.Text(field(t, ev, "monitorClass", "name"))
			owner := field(t, ev, "previousOwner", "javaName").String()
			if class != "sync.Mutex" && class != "sync.RWMutex" {
				t.Errorf("monitor class %q", class)
			}
			if a := field(t, ev, "address").Int(); a != 0 {
				t.Errorf("monitor address %#x: the tracer records none", a)
			}
			if fs := framesOf(t, ev); class == "sync.Mutex" && strings.Contains(strings.Join(fs, " "), "gotrace.lockMutex") {
				count["lockMutex"]++
				// The waker is the workload's goroutine, which unlocked.
				if id := field(t, ev, "previousOwner", "javaThreadId").Int(); id != workloadG || !strings.Contains(owner, "#") {
					t.Errorf("previous owner %q (%d), the workload ran on goroutine %d", owner, id, workloadG)
				}
			}
			if ev.Duration() < DefaultThreshold {
				t.Errorf("monitor enter of %v", ev.Duration())
			}
		case "jdk.JavaMonitorWait":
			if c := jfrstack.Text(field(t, ev, "monitorClass", "name")); c != "sync.Cond" {
				t.Errorf("wait on %q", c)
			}
			if n := field(t, ev, "notifier", "javaName").String(); n == "" {
				t.Error("cond wait without notifier")
			}
		case "jdk.ThreadPark":
			if pc, _ := ev.Field("parkedClass"); pc.Resolve().IsNull() {
				count["park null"]++
			} else {
				count["park "+jfrstack.Text(field(t, ev, "parkedClass", "name"))]++
			}
		case "jdk.GarbageCollection":
			count["gc "+field(t, ev, "cause").Resolve().String()]++
		case "jdk.ExecutionSample":
			if th := field(t, ev, "sampledThread", "javaThreadId").Int(); th > 0 {
				count["sample on a goroutine"]++
			}
		case "jdk.ActiveSetting":
			count["setting "+field(t, ev, "name").String()+"="+field(t, ev, "value").String()]++
		}
	})
	t.Logf("%v", count)
	for what, min := range map[string]int{
		"lockMutex": mutexWaits, "jdk.JavaMonitorWait": condWaits, "park chan": chanWaits, "park sync.WaitGroup": wgWaits,
		"jdk.ThreadSleep": sleeps, "gc System.gc()": explicitGCs, "jdk.GCPhasePause": 2 * explicitGCs,
		"jdk.ExecuteVMOperation": 2 * explicitGCs, "jdk.SafepointBegin": 2 * explicitGCs, "jdk.SafepointEnd": 2 * explicitGCs,
		"sample on a goroutine": 3,
	} {
		if count[what] < min {
			t.Errorf("%d %s, want at least %d", count[what], what, min)
		}
	}
	// Honesty: no per-goroutine lifecycle, no GC sub-phase copies, and
	// settings only for the types the converter produces.
	producible := map[string]bool{"jdk.ActiveSetting": true}
	for k := Kind(0); k < NumKinds; k++ {
		producible[k.String()] = true
	}
	for _, name := range declared {
		if !producible[name] {
			t.Errorf("declares %s, which the converter never writes", name)
		}
	}
	for _, name := range []string{"jdk.ThreadStart", "jdk.ThreadEnd", "jdk.GCPhasePauseLevel1", "jdk.GCPhasePauseLevel2"} {
		if count[name] > 0 {
			t.Errorf("%d %s", count[name], name)
		}
	}
	if count["setting enabled=true"] == 0 || count["setting enabled=true"]%int(NumKinds) != 0 {
		t.Errorf("%d enabled settings, want %d per chunk", count["setting enabled=true"], NumKinds)
	}
}

// TestDisabledKinds checks that a kind turned off is neither written nor
// declared.
func TestDisabledKinds(t *testing.T) {
	var out bytes.Buffer
	if err := Convert(bytes.NewReader(workloadTrace(t)), &out, Options{Thresholds: map[Kind]time.Duration{ThreadSleep: -1, NetworkWait: -1}}); err != nil {
		t.Fatal(err)
	}
	readAll(t, out.Bytes(), func(ev *jfr.Event) {
		for _, c := range ev.Chunk.Metadata.EventTypes() {
			if c.Name == "jdk.ThreadSleep" || c.Name == "go.NetworkWait" {
				t.Fatalf("%s declared while off", c.Name)
			}
		}
	})
}

// TestJDK17Layouts compares the JDK types of a converted recording with the
// metadata of a recording made by OpenJDK 17 (internal/jdklayout), as
// recorder's test of the same name does for the recorder's types.
func TestJDK17Layouts(t *testing.T) {
	oc, err := jfr.NewBytesReader(converted(t), nil).NextChunk()
	if err != nil {
		t.Fatal(err)
	}
	if compared := jdklayout.Compare(t, oc.Metadata, nil); compared < 20 {
		t.Errorf("only %d classes compared", compared)
	}
}

// TestJFRTool checks that OpenJDK 17's jfr reads the converted recording:
// summary counts and print --json values equal our reader's.
func TestJFRTool(t *testing.T) {
	jfrBin, err := exec.LookPath("jfr")
	if err != nil {
		t.Skip("jfr (OpenJDK 17) not on PATH")
	}
	data := converted(t)
	path := filepath.Join(t.TempDir(), "trace.jfr")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ours := map[string]int{}
	readAll(t, data, func(ev *jfr.Event) { ours[ev.Type.Name]++ })
	out, err := exec.Command(jfrBin, "summary", path).CombinedOutput()
	if err != nil {
		t.Fatalf("jfr summary: %v\n%s", err, out)
	}
	for name, n := range ours {
		m := regexp.MustCompile(`(?m)^ ` + regexp.QuoteMeta(name) + ` +(\d+) `).FindSubmatch(out)
		if m == nil || string(m[1]) != strconv.Itoa(n) {
			t.Errorf("jfr summary: %s: %q, our reader counts %d", name, m, n)
		}
	}
	out, err = exec.Command(jfrBin, "print", "--json", "--events", "JavaMonitorEnter,JavaMonitorWait,ThreadPark,GarbageCollection,ExecutionSample", path).Output()
	if err != nil {
		t.Fatalf("jfr print --json: %v", err)
	}
	var doc struct {
		Recording struct {
			Events []struct {
				Type   string                     `json:"type"`
				Values map[string]json.RawMessage `json:"values"`
			} `json:"events"`
		} `json:"recording"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("jfr print --json: %v", err)
	}
	got := map[string]int{}
	for _, e := range doc.Recording.Events {
		got[e.Type]++
		var v struct {
			MonitorClass  struct{ Name string } `json:"monitorClass"`
			PreviousOwner *struct {
				JavaName string `json:"javaName"`
			} `json:"previousOwner"`
			Cause   string `json:"cause"`
			Sampled *struct {
				JavaThreadID int64 `json:"javaThreadId"`
			} `json:"sampledThread"`
		}
		fields, _ := json.Marshal(e.Values)
		if err := json.Unmarshal(fields, &v); err != nil {
			t.Fatal(err)
		}
		switch e.Type {
		case "jdk.JavaMonitorEnter":
			if !strings.HasPrefix(v.MonitorClass.Name, "sync.") || v.PreviousOwner == nil || v.PreviousOwner.JavaName == "" {
				t.Errorf("jfr prints a monitor enter as %s", fields)
			}
		case "jdk.GarbageCollection":
			if v.Cause == "" {
				t.Errorf("jfr prints a GC as %s", fields)
			}
		case "jdk.ExecutionSample":
			if v.Sampled == nil {
				t.Errorf("jfr prints a sample as %s", fields)
			}
		}
	}
	for _, name := range []string{"jdk.JavaMonitorEnter", "jdk.JavaMonitorWait", "jdk.ThreadPark", "jdk.GarbageCollection", "jdk.ExecutionSample"} {
		if got[name] != ours[name] || got[name] == 0 {
			t.Errorf("jfr print --json: %d %s, our reader %d", got[name], name, ours[name])
		}
	}
}
