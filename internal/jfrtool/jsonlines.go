package jfrtool

import (
	"bytes"
	"encoding/json"

	"github.com/flightrec/flightrec/jfr"
)

// jsonLinesPrinter writes each event as the object `jfr print --json`
// writes for it, on one line: the form of a stream, which has no end to
// close a document at.
type jsonLinesPrinter struct {
	jsonPrinter
	compact bytes.Buffer
}

func (j *jsonLinesPrinter) begin()         {}
func (j *jsonLinesPrinter) end()           {}
func (j *jsonLinesPrinter) count() int     { return 0 }
func (j *jsonLinesPrinter) setCount(n int) {}

func (j *jsonLinesPrinter) event(ev *jfr.Event) {
	start := len(j.out)
	j.n = 0
	j.jsonPrinter.event(ev)
	j.compact.Reset()
	if err := json.Compact(&j.compact, j.out[start:]); err != nil {
		// The printer writes valid JSON; keep its text if not.
		j.out = append(j.out, '\n')
		return
	}
	j.out = append(append(j.out[:start], j.compact.Bytes()...), '\n')
}
