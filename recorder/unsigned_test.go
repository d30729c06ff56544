package recorder

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/jfr"
)

type unsignedEvent struct {
	event.Instant
	Freq  uint32 `label:"Frequency" content:"frequency"`
	Bytes uint16 `label:"Bytes" content:"bytes"`
	Plain uint8  `label:"Plain"` // one raw byte: jfr prints it as signed beyond 127
	Addr  uint64 `label:"Address" content:"address"`
}

var unsignedType = event.Define[unsignedEvent](event.Info{Name: "test.Unsigned", Label: "Unsigned"})

// TestUnsignedFields checks that every unsigned field is declared
// @Unsigned whatever its content type, and that `jfr print --json`, which
// ignores @Unsigned, shows 4e9 in a uint32 as 4000000000, not as a
// negative int, and 65000 in a uint16 as 65000.
func TestUnsignedFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "unsigned.jfr")
	rec, err := Start(WithFile(path))
	if err != nil {
		t.Fatal(err)
	}
	var ev unsignedEvent
	unsignedType.Begin(&ev)
	ev.Freq, ev.Bytes, ev.Plain, ev.Addr = 4_000_000_000, 65_000, 120, 1<<40
	ev.Commit()
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"freq": 4_000_000_000, "bytes": 65_000, "plain": 120, "addr": 1 << 40}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	eachEvent(t, data, func(e *jfr.Event) {
		if e.Type.Name != "test.Unsigned" {
			return
		}
		found = true
		for name := range want {
			fd := &e.Type.Fields[e.Type.FieldIndex(name)]
			if _, ok := fd.Annotation("jdk.jfr.Unsigned"); !ok {
				t.Errorf("%s is not declared @Unsigned: %v", name, fd.Annotations)
			}
		}
	})
	if !found {
		t.Fatal("no test.Unsigned event")
	}
	jfrBin, err := exec.LookPath("jfr")
	if err != nil {
		t.Skip("jfr not installed")
	}
	out, err := exec.Command(jfrBin, "print", "--json", "--events", "test.Unsigned", path).Output()
	if err != nil {
		t.Fatalf("jfr print --json: %v", err)
	}
	var doc struct {
		Recording struct {
			Events []struct {
				Values map[string]any `json:"values"`
			} `json:"events"`
		} `json:"recording"`
	}
	if err := json.Unmarshal(out, &doc); err != nil || len(doc.Recording.Events) != 1 {
		t.Fatalf("jfr print --json: %v\n%s", err, out)
	}
	got := doc.Recording.Events[0].Values
	for name, v := range want {
		if got[name] != v {
			t.Errorf("jfr prints %s as %v, want %.0f", name, got[name], v)
		}
	}
}
