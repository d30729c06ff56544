package jdklayout

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/jfr"
)

// JDK17 returns the metadata of a recording made by OpenJDK 17.
func JDK17(t testing.TB) *jfr.Metadata {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	f, err := os.Open(filepath.Join(filepath.Dir(file), "..", "..", "jfr", "testdata", "jdk17-sample.jfr.gz"))
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

// Compare checks every JDK type of ours against OpenJDK 17's: supertype,
// class annotations (events' descriptions aside, which say what the Go
// version records; in type order), and fields in order with their types,
// pool flags and annotations, so that readers going by position
// (async-profiler's converter) or by annotation (jfr, JMC) read ours as the
// JDK's. Every jdk.* or java.* type of ours must exist in JDK 17. Fields
// named in goOnly ("type.field") are Go's own and must come after all of
// the JDK's. It returns how many types it compared.
func Compare(t testing.TB, ours *jfr.Metadata, goOnly map[string]bool) int {
	t.Helper()
	jdk := JDK17(t)
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
			if goOnly[oc.Name+"."+of.Name] {
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
	return compared
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
