package recorder

import (
	"testing"
	"time"
)

// TestStartStopCycles starts and stops recordings with chunks cut every
// millisecond, so the flusher cuts chunks while Stop tears the session
// down: under -race this found the flusher reading the session's runtime
// events without its lock.
func TestStartStopCycles(t *testing.T) {
	for i := range 200 {
		rec, err := Start(WithRing(1<<20, 0), WithMaxChunkAge(time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		emitCounted(10, i)
		if i%4 == 0 {
			time.Sleep(time.Millisecond)
		}
		if err := rec.Stop(); err != nil {
			t.Fatal(err)
		}
	}
}
