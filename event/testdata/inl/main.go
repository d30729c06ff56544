// Command inl uses event types so TestInlining can check, in the
// compiler's -m output, that the emit calls inline at a call site, the
// generated Commit (of gsample) as well as the generic one.
package main

import "github.com/flightrec/flightrec/event"

type sample struct {
	event.Timed
	N int64
}

//go:generate go run ../../../cmd/flightrec gen -type gsample
type gsample struct {
	event.Instant
	N int64
}

var (
	sampleType  = event.Define[sample](event.Info{Name: "test.Inline"})
	gsampleType = event.Define[gsample](event.Info{Name: "test.InlineGenerated"})
)

func main() {
	var ev sample
	sampleType.Begin(&ev)
	if ev.ShouldCommit() {
		ev.N = 1
	}
	ev.Commit()

	var gev gsample
	gsampleType.Begin(&gev)
	if gev.ShouldCommit() {
		gev.N = 1
	}
	gev.Commit()
}
