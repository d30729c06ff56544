package flow

import (
	"bytes"
	"strings"
	"testing"
)

// TestTraceLogPrecision: the trace log prints microseconds (a 250 us hop
// is not "0 ms"), sorts message IDs by their numbers (2:2 before 2:12),
// numbers traces in the order they start (the first trace to start ends
// last) and gives each trace's duration and critical path.
func TestTraceLogPrecision(t *testing.T) {
	a := logInput("A.txt", "0=1700000000000",
		"SPAN;null;2:1", "E;0;main;ODStarted;2:1",
		"SPAN;null;2:12;2:2", "E;1000000;main;ODStarted;2:12", "E;1000100;main;ODStarted;2:2")
	b := logInput("B.txt", "0=1700000000000",
		"SPAN;2:12", "E;1250000;rx;Incoming", "E;1250500;rx;Handling;2:12",
		"SPAN;2:2", "E;1300000;rx;Incoming", "E;1300500;rx;Handling;2:2",
		"SPAN;2:1", "E;10000000;rx;Incoming", "E;10000500;rx;Handling;2:1")
	var out bytes.Buffer
	var order []int
	_, err := Merge([]Input{a, b}, nil, func(tr *Trace) error {
		order = append(order, tr.Index)
		return WriteTrace(&out, tr)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != 2 || order[0] != 1 || order[1] != 0 {
		t.Errorf("traces came out numbered %v, want [1 0]: the trace of 2:1 started first", order)
	}
	want := "TRACE 1: 2 msg\n" +
		"A\t-> B:\t2:2\n" +
		"A\t-> B:\t2:12\n" +
		"duration 300.500 us, critical path A -> B\n" +
		"22:13:20.001000|        |       |* |A|main|ODStarted 2:12\n" +
		"22:13:20.001000|0.000 ms| 100 ns|* |A|main|ODStarted 2:2\n"
	got := out.String()
	if !strings.HasPrefix(got, want) {
		t.Errorf("trace log:\n%s\nwant it to start with\n%s", got, want)
	}
	for _, line := range []string{
		"22:13:20.001250|0.250 ms|       | *|B|rx  |Incoming 2:12\n",
		"22:13:20.001300|0.050 ms|49.5 us| *|B|rx  |Incoming 2:2\n",
		"TRACE 0: 1 msg\nA\t-> B:\t2:1\nduration 10.001 ms, critical path A -> B\n",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("trace log lacks %q:\n%s", line, got)
		}
	}
}
