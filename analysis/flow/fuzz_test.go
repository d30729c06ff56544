package flow

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzMerge merges two nodes' inputs of any bytes, each a text span log or
// a flow recording, and renders every report of the result: no input may
// panic or hang the merge or the reports.
func FuzzMerge(f *testing.F) {
	ex := filepath.Join("testdata", "examples", "ex1")
	a, err := os.ReadFile(filepath.Join(ex, "A.txt"))
	if err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(ex, "B.txt"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(a, b)
	f.Add(a, spanLogToJFR(f, "B", b))
	gen := genInputs(2, 12)
	var logs [2][]byte
	for i := range logs {
		rc, err := gen[i].Open()
		if err != nil {
			f.Fatal(err)
		}
		if logs[i], err = io.ReadAll(rc); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(logs[0], logs[1])
	f.Add(spanLogToJFR(f, "n0", logs[0]), spanLogToJFR(f, "n1", logs[1]))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		stats := NewStats()
		m, err := Merge([]Input{BytesInput("A.txt", a), BytesInput("B.jfr", b)}, &Options{TempDir: t.TempDir()}, func(tr *Trace) error {
			stats.Add(tr)
			if err := WriteTrace(io.Discard, tr); err != nil {
				return err
			}
			_, err := json.Marshal(tr.JSON())
			return err
		})
		if err != nil {
			return
		}
		all := Reports{Messages: true, Traces: true, Locks: true, Interceptors: true}
		if err := stats.WriteText(io.Discard, all); err != nil {
			t.Fatal(err)
		}
		if err := m.WriteInputs(io.Discard); err != nil {
			t.Fatal(err)
		}
		doc := stats.JSON(all)
		in := m.Inputs()
		doc.Inputs = &in
		if _, err := json.Marshal(doc); err != nil {
			t.Fatal(err)
		}
	})
}
