package recorder

import (
	"strings"
	"testing"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/spec"
)

// TestJDKNamedTypeLayout: a type defined under a JDK event's name is
// declared with the JDK's layout only if its fields are that layout's;
// otherwise it cannot be declared, so none of its events are written in a
// layout that readers would misread.
func TestJDKNamedTypeLayout(t *testing.T) {
	jdk := spec.JDKEvent("jdk.FileRead")
	fields := func(kinds ...batch.Kind) []batch.Field {
		names := []string{"path", "bytesRead", "endOfFile", "extra"}
		var fs []batch.Field
		for i, k := range kinds {
			fs = append(fs, batch.Field{Name: names[i], Kind: k})
		}
		return fs
	}
	for _, c := range []struct {
		d    *batch.Desc
		want string // "" for no error, else a part of it
	}{
		{&batch.Desc{Name: jdk.Name, Timed: true, Fields: fields(batch.String, batch.Int64, batch.Bool)}, ""},
		{&batch.Desc{Name: jdk.Name, Timed: false, Fields: fields(batch.String, batch.Int64, batch.Bool)}, "timed"},
		{&batch.Desc{Name: jdk.Name, Timed: true, Fields: fields(batch.String, batch.Int32, batch.Bool)}, "field 1"},
		{&batch.Desc{Name: jdk.Name, Timed: true, Fields: fields(batch.String, batch.Int64)}, "2 fields"},
		{&batch.Desc{Name: jdk.Name, Timed: true, Fields: fields(batch.String, batch.Int64, batch.Bool, batch.Bool)}, "4 fields"},
	} {
		err := checkJDKLayout(c.d, jdk)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("timed=%t %v: %v, want %q", c.d.Timed, c.d.Fields, err, c.want)
		}
	}
}
