package recorder

import (
	"strings"
	"testing"

	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/jfr"
)

// TestRenameShows: a name set after the goroutine's first events, even
// in an earlier chunk, is the one its later chunks are written with.
// (OpenJDK's jfr 17 keeps showing the first name: its parser reuses the
// previous chunk's constant for a key it saw there, and the goroutine's
// key is its id.)
func TestRenameShows(t *testing.T) {
	rec, err := Start(WithRing(0, 0), WithSettings(Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	step := make(chan string)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for name := range step {
			if name != "" {
				event.SetGoroutineName(name)
			}
			emitCounted(2)
			done <- struct{}{}
		}
	}()
	// Unnamed, then named, then renamed, each in its own chunk.
	for _, name := range []string{"", "first", "second"} {
		step <- name
		<-done
		theSession.cutNow() // a name change shows in the next chunk
	}
	close(step)
	<-done
	data := dumped(t, rec)
	var got []string
	eachEvent(t, data, func(ev *jfr.Event) {
		if ev.Type.Name != "test.Counted" {
			return
		}
		th, _ := ev.Field("eventThread")
		name, _ := th.Field("javaName")
		got = append(got, name.String())
	})
	want := "first first second second"
	if len(got) != 6 || strings.Join(got[2:], " ") != want || !strings.HasPrefix(got[0], "goroutine ") {
		t.Errorf("thread names %q, want two unnamed then %s", got, want)
	}
}
