package jfrtool

import (
	"github.com/flightrec/flightrec/jfr"
)

// jsonLinesPrinter writes each event as the object `jfr print --json`
// writes for it, without whitespace outside strings, on one line: the
// form of a stream, which has no end to close a document at.
type jsonLinesPrinter struct {
	jsonPrinter
}

func (j *jsonLinesPrinter) begin()         {}
func (j *jsonLinesPrinter) end()           {}
func (j *jsonLinesPrinter) count() int     { return 0 }
func (j *jsonLinesPrinter) setCount(n int) {}

func (j *jsonLinesPrinter) event(ev *jfr.Event) {
	j.n = 0
	j.jsonPrinter.event(ev)
	j.out = append(j.out, '\n')
}
