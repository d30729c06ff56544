package flow

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// traceText is the trace log of one trace, without its number.
func traceText(t *testing.T, tr *Trace) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteTrace(&b, tr); err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(b.String(), ":")
	return rest
}

// TestCutMergesBack cuts every trace of the examples and of a generated
// cluster whose clocks are off by milliseconds and whose one-way delays
// are asymmetric, and merges each cut again: the trace log must be the
// same, to the nanosecond and in the same order.
func TestCutMergesBack(t *testing.T) {
	// Two request/response traces: the first fast one way and slow back,
	// the second the other way round. Over both the clocks agree; one
	// trace alone would suggest an offset of 4 ms.
	asym := []Input{
		logInput("A.txt", "0=1700000000000",
			"SPAN;null;1:1", "E;0;main;ODStarted;1:1",
			"SPAN;2:1", "E;11000000;rx;Incoming", "E;11000100;rx;Handling;2:1",
			"SPAN;null;1:2", "E;20000000;main;ODStarted;1:2",
			"SPAN;2:2", "E;31000000;rx;Incoming", "E;31000100;rx;Handling;2:2"),
		logInput("B.txt", "0=1700000000000",
			"SPAN;1:1;2:1", "E;1000000;rx;Incoming", "E;1000200;rx;Handling;1:1", "E;2000000;rx;ODStarted;2:1",
			"SPAN;1:2;2:2", "E;29000000;rx;Incoming", "E;29000200;rx;Handling;1:2", "E;30000000;rx;ODStarted;2:2"),
	}
	sets := map[string][]Input{"gen": genInputs(3, 12), "asymmetric": asym}
	for _, ex := range []string{"ex1", "ex2", "ex5", "edge_loopback", "edge_nc_dup"} {
		sets[ex] = exampleInputs(t, ex)
	}
	for name, ins := range sets {
		t.Run(name, func(t *testing.T) {
			r := mergeInputs(t, ins)
			for i, tr := range r.list {
				dir := filepath.Join(t.TempDir(), fmt.Sprint(i))
				files, err := Cut(tr, dir)
				if err != nil {
					t.Fatal(err)
				}
				var cutIns []Input
				for _, f := range files {
					cutIns = append(cutIns, FileInput(f))
				}
				again := mergeInputs(t, cutIns)
				if len(again.list) != 1 {
					t.Fatalf("trace %d: the cut merges into %d traces", i, len(again.list))
				}
				diffText(t, fmt.Sprintf("trace %d re-merged", i), traceText(t, again.list[0]), traceText(t, tr))
				for j := range tr.Events {
					if a, b := again.list[0].Events[j].Wall, tr.Events[j].Wall; a != b {
						t.Errorf("trace %d event %d: wall %d after the cut, %d before", i, j, a, b)
						break
					}
				}
			}
		})
	}
}
