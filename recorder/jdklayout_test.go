package recorder

import (
	"bytes"
	"compress/gzip"
	"os"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/jfr"
	// Package jdkio's events, written through the event API in the JDK's
	// layouts, are declared only in programs that import it.
	_ "github.com/flightrec/flightrec/jdkio"
)

// jdk17Metadata returns the metadata of a recording made by OpenJDK 17.
func jdk17Metadata(t *testing.T) *jfr.Metadata {
	t.Helper()
	f, err := os.Open("../jfr/testdata/jdk17-sample.jfr.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	c, err := jfr.NewReader(zr, nil).NextChunk()
	if err != nil {
		t.Fatal(err)
	}
	return c.Metadata
}

// describeAnnotations renders annotations in order, as "@type(k=v,...)".
func describeAnnotations(as []jfr.Annotation) string {
	var b strings.Builder
	for _, a := range as {
		b.WriteString("@" + a.Name() + "(")
		for i, kv := range a.Values {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(kv.Key + "=" + kv.Value)
		}
		b.WriteString(") ")
	}
	return b.String()
}

func describeField(f *jfr.Field) string {
	s := f.Name + " " + f.Type.Name
	if f.Array {
		s += "[]"
	}
	if f.ConstantPool {
		s += " (pool)"
	}
	return s + " " + describeAnnotations(f.Annotations)
}

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
	jdk := jdk17Metadata(t)
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
	compared := 0
	for _, oc := range ours.Classes {
		jc := jdk.ClassByName(oc.Name)
		if jc == nil {
			if strings.HasPrefix(oc.Name, "jdk.") || strings.HasPrefix(oc.Name, "java.") {
				t.Errorf("%s: not a JDK 17 type", oc.Name)
			}
			continue
		}
		compared++
		if oc.SuperType != jc.SuperType || oc.SimpleType != jc.SimpleType {
			t.Errorf("%s: supertype %q simple %v, JDK 17 has %q %v", oc.Name, oc.SuperType, oc.SimpleType, jc.SuperType, jc.SimpleType)
		}
		var oa, ja []jfr.Annotation
		for _, a := range oc.Annotations {
			if a.Name() != "jdk.jfr.Description" || !oc.IsEvent() {
				oa = append(oa, a)
			}
		}
		for _, a := range jc.Annotations {
			if a.Name() != "jdk.jfr.Description" || !jc.IsEvent() {
				ja = append(ja, a)
			}
		}
		if o, j := describeAnnotations(sortedByType(oa)), describeAnnotations(sortedByType(ja)); o != j {
			t.Errorf("%s: class annotations\n  ours: %s\n  JDK:  %s", oc.Name, o, j)
		}
		n := 0
		for i := range oc.Fields {
			of := &oc.Fields[i]
			if jdkLayoutExceptions[oc.Name+"."+of.Name] {
				if i < len(jc.Fields) {
					t.Errorf("%s.%s: a Go-only field before the JDK's last field", oc.Name, of.Name)
				}
				continue
			}
			if n >= len(jc.Fields) {
				t.Errorf("%s: extra field %s", oc.Name, describeField(of))
				continue
			}
			if o, j := describeField(of), describeField(&jc.Fields[n]); o != j {
				t.Errorf("%s field %d:\n  ours: %s\n  JDK:  %s", oc.Name, n, o, j)
			}
			n++
		}
		for ; n < len(jc.Fields); n++ {
			t.Errorf("%s: missing field %s", oc.Name, describeField(&jc.Fields[n]))
		}
	}
	if compared < 40 {
		t.Errorf("only %d classes compared", compared)
	}
}

// sortedByType orders class annotations by type name: the JDK writes a
// class's annotations in an order of its own, which no reader depends on.
func sortedByType(as []jfr.Annotation) []jfr.Annotation {
	out := append([]jfr.Annotation(nil), as...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Name() < out[j-1].Name(); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
