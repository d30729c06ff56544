package flow

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/internal/flowspec"
	"github.com/flightrec/flightrec/jfr"
)

// genJFRInputs returns the generated 5-node cluster of genInputs with node
// 1 as a flow recording of five chunks, and that recording.
func genJFRInputs(t *testing.T, requests int) ([]Input, []byte) {
	t.Helper()
	ins := genInputs(5, requests)
	rc, err := ins[1].Open()
	if err != nil {
		t.Fatal(err)
	}
	log, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	spans := strings.Count(string(log), "SPAN;")
	rec := spanLogToJFRChunks(t, "n1", log, (spans+4)/5)
	return ins, rec
}

// eventsOfNode counts the events of node i in the merged traces.
func eventsOfNode(t *testing.T, ins []Input, i int) (int, *Merger) {
	t.Helper()
	n := 0
	m, err := Merge(ins, nil, func(tr *Trace) error {
		for j := range tr.Events {
			if int(tr.Events[j].Node) == i {
				n++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, m
}

// TestTruncatedRecordingKeepsCompleteChunks cuts one node's recording of
// five chunks at 96%: the events of its four complete chunks are all
// merged (the reader yields them before the error), and the damage is
// reported with the file, the chunk and the byte offset.
func TestTruncatedRecordingKeepsCompleteChunks(t *testing.T) {
	ins, rec := genJFRInputs(t, 2000)
	ins[1] = BytesInput("n1.jfr", rec)
	whole, m := eventsOfNode(t, ins, 1)
	if len(m.Errors) != 0 {
		t.Fatalf("errors on the whole recording: %v", m.Errors)
	}
	ins[1] = BytesInput("n1.jfr", rec[:len(rec)*96/100])
	cut, m := eventsOfNode(t, ins, 1)
	t.Logf("%d of %d events of the cut node merged", cut, whole)
	if cut < whole*78/100 {
		t.Errorf("%d of %d events of the cut node merged, want those of its 4 complete chunks (80%%)", cut, whole)
	}
	if len(m.Errors) != 1 || !strings.Contains(m.Errors[0].Error(), "n1.jfr: chunk 4, byte offset") {
		t.Errorf("errors %v, want one naming n1.jfr, chunk 4 and its offset", m.Errors)
	}
}

// recordIn returns the file offset of an event record in the middle of
// chunk c of a recording.
func recordIn(t *testing.T, rec []byte, c int) int64 {
	t.Helper()
	r := jfr.NewBytesReader(rec, nil)
	var offs []int64
	for {
		rd, err := r.ReadRecord()
		if err != nil {
			break
		}
		if r.Chunk().Index == c && rd.TypeID > 1 {
			offs = append(offs, rd.Offset)
		}
	}
	if len(offs) == 0 {
		t.Fatalf("no events in chunk %d", c)
	}
	return offs[len(offs)/2]
}

// TestDamagedChunkSkipped zeroes the size of a record in the middle of
// chunk 2 of five: the reader cannot find that chunk's later records, but
// the chunks after it are read, the damage is reported with its file,
// chunk and offset, and the spans it may have cut are marked.
func TestDamagedChunkSkipped(t *testing.T) {
	ins, rec := genJFRInputs(t, 2000)
	ins[1] = BytesInput("n1.jfr", rec)
	whole, _ := eventsOfNode(t, ins, 1)
	bad := bytes.Clone(rec)
	off := recordIn(t, bad, 2)
	bad[off] = 0
	ins[1] = BytesInput("n1.jfr", bad)
	got, m := eventsOfNode(t, ins, 1)
	t.Logf("%d of %d events of the damaged node merged; %v", got, whole, m.Errors)
	if got < whole*85/100 || got >= whole {
		t.Errorf("%d of %d events of the damaged node merged, want all but part of one chunk", got, whole)
	}
	want := fmt.Sprintf("n1.jfr: chunk 2, byte offset %d: record has zero size", off)
	if len(m.Errors) != 1 || m.Errors[0].Error() != want {
		t.Errorf("errors %v, want %q", m.Errors, want)
	}
	if m.IncompleteTraces == 0 {
		t.Error("no trace marked incomplete")
	}
}

// TestNoFlowEvents: a recording without flow events (a JVM's, or any
// other) is refused with its name instead of reported as empty.
func TestNoFlowEvents(t *testing.T) {
	var buf bytes.Buffer
	fw := newFlowWriter(t, &buf, 0, 1700000000000000000)
	fw.write(flowspec.NodeEvent, 0, map[string]jfr.Value{flowspec.FieldNodeName: jfr.StringValue("X")})
	fw.close()
	ins := exampleInputs(t, "ex1")
	ins = append(ins, BytesInput("other.jfr", buf.Bytes()))
	_, err := Merge(ins, nil, func(*Trace) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "other.jfr: no flow events") {
		t.Errorf("err = %v, want other.jfr refused", err)
	}
}

// TestUnreadableInput: inputs of which nothing could be read (missing,
// empty, a directory) are refused with their errors when no input was
// read, instead of merged into a report of empty nodes (which printed NaN
// figures before the error); beside inputs that were read, one counts as
// finished, as a damaged one does, and its error is reported.
func TestUnreadableInput(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.jfr")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.jfr")
	for _, path := range []string{missing, empty, dir} {
		_, err := Merge([]Input{FileInput(path)}, nil, func(*Trace) error { return nil })
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s alone: err = %v, want the input refused by name", path, err)
		}
	}
	ins := append(exampleInputs(t, "ex1"), FileInput(missing))
	traces := 0
	m, err := Merge(ins, nil, func(*Trace) error { traces++; return nil })
	if err != nil || traces == 0 || len(m.Errors) != 1 || !strings.Contains(m.Errors[0].Error(), missing) {
		t.Errorf("beside readable inputs: %d traces, errors %v, err %v; want the others merged and the missing one reported", traces, m.Errors, err)
	}
}

// TestSameNodeNumber: two inputs that originate IDs of one node number
// would merge unrelated operations; the merge refuses them.
func TestSameNodeNumber(t *testing.T) {
	a := logInput("A.txt", "0=1700000000000", "SPAN;null;1:1", "E;1000;main;ODStarted;1:1")
	b := logInput("B.txt", "0=1700000000000", "SPAN;null;1:2", "E;1000;main;ODStarted;1:2")
	c := logInput("C.txt", "0=1700000000000", "SPAN;1:1", "E;5000;rx;Incoming", "E;6000;rx;Handling;1:1")
	_, err := Merge([]Input{a, b, c}, nil, func(*Trace) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "A.txt and B.txt both use node number 1") {
		t.Errorf("err = %v, want A.txt and B.txt refused", err)
	}
}

// TestMissingNode drops node 2's input from the generated cluster: node
// number 2 is named as missing, the requests it replied to count as
// replies from a node without input, not as undetected transmissions,
// and the requests to it as sent to a node without input, not as lost.
func TestMissingNode(t *testing.T) {
	ins := genInputs(3, 300)
	ins = []Input{ins[0], ins[1]}
	st := NewStats()
	m, err := Merge(ins, nil, func(tr *Trace) error { st.Add(tr); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.MissingNodes, []uint16{2}) {
		t.Fatalf("missing nodes %v, want [2]", m.MissingNodes)
	}
	var out strings.Builder
	st.WriteText(&out, Reports{Messages: true})
	text := out.String()
	// 300 requests, 100 from each node, half of nodes 0 and 1's to node
	// 2: node 2's 100 requests and 100 replies came from it. The 100
	// replies to its requests share a trace with them, so they went to
	// it. The 100 requests to it are alone in their traces (the span that
	// linked each to its reply is in the missing input): not received.
	for _, want := range []string{
		"Transmission of 0 messages not detected.\n",
		"100 messages have not been received at all.\n",
		"200 messages came from nodes without input (2).\n",
		"100 messages were not received in traces that involve nodes without input (2): probably sent to them.\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
}
