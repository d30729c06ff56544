// Package stale has an event type for TestGeneratedStaleFailsBuild, which
// generates its Commit, changes a field and builds.
package stale

import "github.com/flightrec/flightrec/event"

type staleEv struct {
	event.Instant
	N int64
	S string
}

var staleType = event.Define[staleEv](event.Info{Name: "test.Stale"})

// Emit emits an event.
func Emit() {
	var ev staleEv
	staleType.Begin(&ev)
	ev.N, ev.S = 1, "x"
	ev.Commit()
}
