package recorder

import (
	"bytes"
	"testing"

	"github.com/flightrec/flightrec/internal/jdklayout"
	"github.com/flightrec/flightrec/jfr"
	// Package jdkio's events, written through the event API in the JDK's
	// layouts, are declared only in programs that import it.
	_ "github.com/flightrec/flightrec/jdkio"
)

// jdkLayoutExceptions are the differences from OpenJDK 17 that are meant:
// class descriptions say what the Go version records, and fields only Go
// has come after all of the JDK's.
var jdkLayoutExceptions = map[string]bool{
	"jdk.DataLoss.droppedEvents": true,
}

// TestJDK17Layouts compares every JDK type the recorder declares (events,
// the types they refer to, annotations, primitives) with the metadata of a
// recording made by OpenJDK 17: field order, field types, pool flags and
// annotations in order must be the same, so that readers which go by
// position (async-profiler's converter) or by annotation (jfr, JMC) read
// our files as the JDK's. Every jdk.* or java.* type we declare must exist
// in JDK 17.
func TestJDK17Layouts(t *testing.T) {
	prof, _ := Preset("profile")
	rec, err := Start(WithRing(8<<20, 0), WithSettings(prof))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rec.Dump(&buf); err != nil {
		t.Fatal(err)
	}
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	c, err := jfr.NewBytesReader(buf.Bytes(), nil).NextChunk()
	if err != nil {
		t.Fatal(err)
	}
	ours := c.Metadata
	for _, name := range []string{"jdk.OldGarbageCollection", "jdk.YoungGarbageCollection", "jdk.Shutdown"} {
		if ours.ClassByName(name) == nil {
			t.Errorf("%s is not declared", name)
		}
	}
	compared := jdklayout.Compare(t, ours, jdkLayoutExceptions)
	if compared < 40 {
		t.Errorf("only %d classes compared", compared)
	}
}
