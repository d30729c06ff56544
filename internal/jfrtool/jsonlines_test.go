package jfrtool

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestPrintJSONLines: each line of the JSON-lines format is the compacted
// object the JSON document has for the same event, in the same order.
func TestPrintJSONLines(t *testing.T) {
	for _, c := range []struct{ file, events string }{
		{"jdk17-alltypes.jfr", ""},
		{"jdk17-sample.jfr", "CPULoad,ExecutionSample,GCHeapSummary,Thread*"},
	} {
		name := c.file
		path := recording(t, name)
		opts := PrintOptions{StackDepth: 5, Events: c.events}
		var doc struct {
			Recording struct {
				Events []json.RawMessage `json:"events"`
			} `json:"recording"`
		}
		if err := json.Unmarshal(printFile(t, path, FormatJSON, opts), &doc); err != nil {
			t.Fatalf("%s: JSON document: %v", name, err)
		}
		lines := bytes.Split(bytes.TrimSuffix(printFile(t, path, FormatJSONLines, opts), []byte("\n")), []byte("\n"))
		if len(lines) != len(doc.Recording.Events) || len(lines) < 10 {
			t.Fatalf("%s: %d lines, %d events in the document", name, len(lines), len(doc.Recording.Events))
		}
		for i, ev := range doc.Recording.Events {
			var want bytes.Buffer
			if err := json.Compact(&want, ev); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(lines[i], want.Bytes()) {
				t.Fatalf("%s: line %d:\n%s\nwant\n%s", name, i+1, lines[i], want.Bytes())
			}
		}
	}
}
