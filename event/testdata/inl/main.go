// Command inl uses an event type so TestInlining can check, in the
// compiler's -m output, that the emit calls inline at a call site.
package main

import "github.com/flightrec/flightrec/event"

type sample struct {
	event.Timed
	N int64
}

var sampleType = event.Define[sample](event.Info{Name: "test.Inline"})

func main() {
	var ev sample
	sampleType.Begin(&ev)
	if ev.ShouldCommit() {
		ev.N = 1
	}
	ev.Commit()
}
