package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/analysis/flow"
	"github.com/flightrec/flightrec/internal/flowspec"
	"github.com/flightrec/flightrec/jfr"
)

// writeFlowRecording writes node B's recording: it receives and handles
// A's messages 1:1..1:n, a third of them in each of three chunks.
func writeFlowRecording(t *testing.T, path string, n int) {
	t.Helper()
	md, err := flow.FlowMetadata()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const origin = 1700000000000000000
	w := jfr.NewWriter(f, &jfr.WriterOptions{StartNanos: origin, StartTicks: 0, TicksPerSecond: 1e9, Now: func() int64 { return 0 }})
	if err := w.SetMetadata(md); err != nil {
		t.Fatal(err)
	}
	write := func(name string, ticks int64, set map[string]jfr.Value) {
		cl := md.ClassByName(name)
		vals := make([]jfr.Value, len(cl.Fields))
		for i, fd := range cl.Fields {
			switch v, ok := set[fd.Name]; {
			case fd.Name == "startTime":
				vals[i] = jfr.IntValue(jfr.KindLong, ticks)
			case ok:
				vals[i] = v
			case fd.Array:
				vals[i] = jfr.ArrayValue(fd.Type)
			case fd.Type.Name == "java.lang.String":
				vals[i] = jfr.Null()
			case fd.Type.Name == "boolean":
				vals[i] = jfr.BoolValue(false)
			default:
				vals[i] = jfr.IntValue(jfr.KindLong, 0)
			}
		}
		if err := w.WriteEvent(cl, vals); err != nil {
			t.Fatal(err)
		}
	}
	long := func(v int64) jfr.Value { return jfr.IntValue(jfr.KindLong, v) }
	write(flowspec.NodeEvent, 0, map[string]jfr.Value{flowspec.FieldNodeName: jfr.StringValue("B"), flowspec.FieldNodeNumber: long(2)})
	for j := 1; j <= n; j++ {
		at := int64(j)*1_000_000 + 40_000
		if j > 1 && (j-1)%(n/3) == 0 {
			if err := w.StartChunk(at - 1); err != nil {
				t.Fatal(err)
			}
		}
		id := long(flowspec.MessageID(1, uint64(j)))
		common := map[string]jfr.Value{flowspec.FieldSpan: long(int64(j)), flowspec.FieldThread: jfr.StringValue("rx"), flowspec.FieldMessage: id}
		write("flightrec.flow.Received", at, common)
		write("flightrec.flow.HandleStart", at+5000, common)
		write(flowspec.SpanEvent, at+6000, map[string]jfr.Value{flowspec.FieldSpan: long(int64(j)), flowspec.FieldIncoming: id})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// TestFlowDamagedRecordingCLI: B's recording is cut in its last chunk.
// flow stats prints the report from everything before the damage, names
// the damage (file, chunk, byte offset) on stderr and in INPUTS, and exits
// 1.
func TestFlowDamagedRecordingCLI(t *testing.T) {
	dir := t.TempDir()
	var a strings.Builder
	a.WriteString("0=1700000000000\n")
	for j := 1; j <= 300; j++ {
		fmt.Fprintf(&a, "SPAN;null;1:%d\nE;%d;main;ODStarted;1:%d\n", j, j*1_000_000, j)
	}
	aPath, bPath := filepath.Join(dir, "A.txt"), filepath.Join(dir, "B.jfr")
	if err := os.WriteFile(aPath, []byte(a.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFlowRecording(t, bPath, 300)
	data, _ := os.ReadFile(bPath)
	if err := os.WriteFile(bPath, data[:len(data)*95/100], 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "flow", "stats", aPath, bPath)
	damage := bPath + ": chunk 2, byte offset "
	if code != 1 || !strings.Contains(string(errOut), damage) {
		t.Errorf("exit %d, stderr %s; want 1 and %q", code, errOut, damage)
	}
	// The 200 messages of B's two complete chunks were received; the last
	// chunk's are lost to the damage.
	for _, want := range []string{
		"\t\tA\t -> B:\t      200 unique,       200 total,",
		"100 messages have not been received at all.\n",
		"\nB\t" + bPath + "\tnumber 2\t",
		"Damage: " + damage,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
