package event

import (
	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/stack"
)

// GoroutineInfo is what the program said about a goroutine.
type GoroutineInfo = batch.GoroutineInfo

// SetGoroutineName names the calling goroutine in recordings (the
// javaName of its java.lang.Thread) and attaches labels (key, value
// pairs), written as its thread group. An empty name and no labels forget
// the goroutine; do that before a long-lived program's goroutine exits
// (the recorder keeps the name until the chunks holding the goroutine's
// events are written).
func SetGoroutineName(name string, labels ...string) {
	g := stack.Goid()
	if name == "" && len(labels) == 0 {
		batch.ForgetName(g)
		return
	}
	batch.SetName(g, GoroutineInfo{Name: name, Labels: labelString(labels)})
}

// LookupGoroutine returns what SetGoroutineName set for goroutine g.
func LookupGoroutine(g uint64) (GoroutineInfo, bool) { return batch.LookupName(g) }
