package recorder

import (
	"bytes"
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
