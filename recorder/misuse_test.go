package recorder

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/jfr"
)

// TestNilRecording: the methods of a nil *Recording (what a failed Start
// returns) and Dump to a nil writer return errors rather than panic.
func TestNilRecording(t *testing.T) {
	var r *Recording
	if err := r.Stop(); err == nil || !strings.Contains(err.Error(), "nil *Recording") {
		t.Errorf("Stop of nil: %v", err)
	}
	if err := r.Dump(&bytes.Buffer{}); err == nil {
		t.Error("Dump of nil: no error")
	}
	r.SetSettings(Settings{})
	rec, err := Start(WithRing(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	if err := rec.Dump(nil); err == nil || !strings.Contains(err.Error(), "nil io.Writer") {
		t.Errorf("Dump(nil): %v", err)
	}
}

// TestLargeEvents: an event up to batch.MaxEventSize is recorded whatever
// the state of its P's buffer; a larger one is dropped and counted in
// jdk.DataLoss.
func TestLargeEvents(t *testing.T) {
	rec, err := Start(WithRing(0, 0), WithSettings(Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	big := strings.Repeat("x", batch.MaxEventSize-200)
	huge := strings.Repeat("y", batch.MaxEventSize+1)
	emit := func(n int64, s string) {
		var ev counted
		countedType.Begin(&ev)
		ev.N, ev.S = n, s
		ev.Commit()
	}
	// Each big event but perhaps the first needs a fresh buffer.
	for i := range 3 {
		emit(int64(i), big)
	}
	emit(3, huge)
	emit(4, "small")
	var got []int64
	var droppedEvents, amount int64
	eachEvent(t, dumped(t, rec), func(ev *jfr.Event) {
		switch ev.Type.Name {
		case "test.Counted":
			n, _ := ev.Field("n")
			s, _ := ev.Field("s")
			if l := len(s.String()); l != len(big) && l != len("small") {
				t.Errorf("event %d has a string of %d bytes", n.Int(), l)
			}
			got = append(got, n.Int())
		case "jdk.DataLoss":
			d, _ := ev.Field("droppedEvents")
			a, _ := ev.Field("amount")
			droppedEvents += d.Int()
			amount += a.Int()
		}
	})
	if len(got) != 4 || got[3] != 4 {
		t.Errorf("recorded events %v, want 0 1 2 4", got)
	}
	if droppedEvents != 1 || amount < int64(len(huge)) {
		t.Errorf("jdk.DataLoss counts %d events, %d bytes; want 1 event of over %d bytes", droppedEvents, amount, len(huge))
	}
}

// TestUndeclarableType: a type that cannot be declared (registered past
// event.Define's checks) costs no other type its events: it stays off,
// the file is readable, and Stop names it. It runs in a child process, as
// the bad type stays registered.
func TestUndeclarableType(t *testing.T) {
	if os.Getenv("FLIGHTREC_TEST_UNDECLARABLE") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestUndeclarableType$", "-test.v")
		cmd.Env = append(os.Environ(), "FLIGHTREC_TEST_UNDECLARABLE=1")
		out, err := cmd.CombinedOutput()
		skipIfCannotExec(t, err)
		if err != nil || !strings.Contains(string(out), "--- PASS: TestUndeclarableType") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	for _, name := range []string{"java.lang.String", "jdk.DataLoss", "has space"} {
		if err := batch.Register(&batch.Desc{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := Start(WithRing(0, 0), WithSettings(Settings{"*": {Enabled: Bool(true)}}))
	if err != nil {
		t.Fatal(err)
	}
	types, _ := batch.Types()
	for _, d := range types {
		if d.On.Load() && declarable(d) != nil {
			t.Errorf("%s is enabled", d.Name)
		}
	}
	emitCounted(5)
	data := dumped(t, rec)
	if n := readEvents(t, data)["test.Counted"]; n != 5 {
		t.Errorf("%d events of test.Counted, want 5", n)
	}
	if _, err := exec.LookPath("jfr"); err == nil {
		path := filepath.Join(t.TempDir(), "undeclarable.jfr")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("jfr", "summary", path).CombinedOutput(); err != nil || !strings.Contains(string(out), "test.Counted") {
			t.Errorf("jfr summary: %v\n%s", err, out)
		}
	}
	err = rec.Stop()
	for _, name := range []string{"java.lang.String", "jdk.DataLoss", "has space"} {
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("event type %q cannot be declared", name)) {
			t.Errorf("Stop: %v, want it to name %s", err, name)
		}
	}
}
