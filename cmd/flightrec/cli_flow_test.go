package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const flowExamples = "../../analysis/flow/testdata/examples/"

func flowFiles(ex string, nodes ...string) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, flowExamples+ex+"/"+n+".txt")
	}
	return out
}

func TestFlowTracesCLI(t *testing.T) {
	code, out, errOut := runCmd(t, append([]string{"flow", "traces"}, flowFiles("ex1", "A", "B")...)...)
	if code != 0 || len(errOut) != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	want, _ := os.ReadFile(flowExamples + "ex1/out.txt")
	if !bytes.Equal(out, want) {
		t.Errorf("flow traces ex1:\n%s\nwant\n%s", out, want)
	}
	// --json after the files, as the other commands allow.
	code, out, _ = runCmd(t, append(append([]string{"flow", "traces"}, flowFiles("ex5", "A", "B", "C")...), "--json")...)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var doc struct {
		Traces []struct {
			Tag      string
			Messages []struct{ ID, From string }
			Events   []struct{ Node, Type, Payload string }
		}
		Nodes      []string
		TraceCount int
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if doc.TraceCount != 2 || len(doc.Traces) != 2 || doc.Traces[0].Tag != "PUT" || doc.Traces[1].Tag != "GET" ||
		len(doc.Traces[0].Events) != 25 || strings.Join(doc.Nodes, ",") != "A,B,C" {
		t.Errorf("json: %+v", doc)
	}
}

func TestFlowStatsCLI(t *testing.T) {
	files := flowFiles("ex5", "A", "B", "C")
	code, out, _ := runCmd(t, append([]string{"flow", "stats"}, files...)...)
	want, _ := os.ReadFile(flowExamples + "ex5/stats.txt")
	if code != 0 || !bytes.HasPrefix(out, want) || !bytes.HasSuffix(out, []byte("* INTERCEPTORS *\n****************\n")) {
		t.Errorf("exit %d, flow stats ex5:\n%s", code, out)
	}
	code, out, _ = runCmd(t, append([]string{"flow", "stats", "--locks"}, files...)...)
	if code != 0 || !strings.HasPrefix(string(out), "\n*********\n* LOCKS *\n") || strings.Contains(string(out), "MESSAGES") {
		t.Errorf("exit %d, flow stats --locks:\n%s", code, out)
	}
	code, out, _ = runCmd(t, append([]string{"flow", "stats", "--json", "--messages", "--traces"}, flowFiles("ex1", "A", "B")...)...)
	var doc struct {
		Messages struct {
			Tags []struct {
				Tags         []string
				AvgLatencyUs *float64
			}
		}
		Traces []struct {
			Tag          string
			ProcessingUs struct{ Avg float64 }
		}
		Locks *struct{}
	}
	if err := json.Unmarshal(out, &doc); err != nil || code != 0 {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	if len(doc.Messages.Tags) != 2 || doc.Messages.Tags[0].AvgLatencyUs == nil || *doc.Messages.Tags[0].AvgLatencyUs != 500 ||
		len(doc.Traces) != 1 || doc.Traces[0].ProcessingUs.Avg != 4140 || doc.Locks != nil {
		t.Errorf("json: %s", out)
	}
}

func TestFlowCutCLI(t *testing.T) {
	dir := t.TempDir()
	files := flowFiles("ex5", "A", "B", "C")
	code, out, errOut := runCmd(t, append([]string{"flow", "cut", "--message", "B|C|U0:3", "--out", dir}, files...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	cut := strings.Fields(string(out))
	if len(cut) != 3 || filepath.Base(cut[1]) != "B.txt" {
		t.Fatalf("cut files %q", cut)
	}
	_, whole, _ := runCmd(t, append([]string{"flow", "traces"}, files...)...)
	_, again, _ := runCmd(t, append([]string{"flow", "traces"}, cut...)...)
	trace0 := string(whole[:bytes.Index(whole, []byte("TRACE 1"))])
	if string(again) != trace0 {
		t.Errorf("the cut merges to\n%s\nwant\n%s", again, trace0)
	}
	code, _, errOut = runCmd(t, append([]string{"flow", "cut", "--message", "nope", "--out", dir}, files...)...)
	if code != 1 || !strings.Contains(string(errOut), "message nope is in no trace") {
		t.Errorf("exit %d, %s", code, errOut)
	}
}

func TestFlowErrorsCLI(t *testing.T) {
	for _, args := range [][]string{
		{"flow"},
		{"flow", "traces"},
		{"flow", "merge", "x.txt"},
		{"flow", "traces", "--locks", "x.txt"},
		{"flow", "cut", "x.txt"},
		{"flow", "stats", "--message", "m", "x.txt"},
	} {
		if code, _, errOut := runCmd(t, args...); code != 2 || !strings.Contains(string(errOut), "usage:") {
			t.Errorf("%q: exit %d, %s", args, code, errOut)
		}
	}
	// A missing input counts as finished: the others are merged and
	// printed, the error is reported, the status is 1.
	code, out, errOut := runCmd(t, "flow", "traces", flowExamples+"ex5/A.txt", "missing/Z.txt")
	if code != 1 || !strings.Contains(string(errOut), "missing/Z.txt") || !strings.Contains(string(out), "TRACE 0: 1 msg\nA\t-> -nobody-:\tA|B|U0:8\n") {
		t.Errorf("exit %d, stdout %s, stderr %s", code, out, errOut)
	}
	// The edge inputs on which the reference tool hung or died.
	for _, ex := range []string{"edge_hang", "edge_nc_dup", "edge_loopback"} {
		if code, _, errOut := runCmd(t, append([]string{"flow", "stats"}, flowFiles(ex, "A", "B")...)...); code != 0 {
			t.Errorf("%s: exit %d, %s", ex, code, errOut)
		}
	}
	// No progress bar unless stderr is a terminal (here it is a file).
	if newProgressBar(os.Stderr) != nil && !isTerminal(t, os.Stderr) {
		t.Error("progress bar on a non-terminal")
	}
	if f, err := os.CreateTemp(t.TempDir(), "e"); err == nil && newProgressBar(f) != nil {
		t.Error("progress bar on a file")
	}
}

func isTerminal(t *testing.T, f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
