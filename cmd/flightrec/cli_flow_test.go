package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
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
	// The trace log (analysis/flow's tests compare it with the reference
	// tool's), then the INPUTS report.
	for _, want := range []string{
		"TRACE 0: 2 msg\nA\t-> B:\tA|B|U0:1\nB\t-> A:\tB|A|U0:1\nduration 3.000 ms, critical path A -> B -> A\n",
		"22:13:20.001200|0.200 ms| 200 us|  *  |A|main  |ODStarted A|B|U0:1\n",
		"\n**********\n* INPUTS *\n**********\nA\t" + flowExamples + "ex1/A.txt\tnumber unknown\tclock offset 0 ns\n",
		"1 traces, 0 incomplete",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("flow traces ex1 lacks %q:\n%s", want, out)
		}
	}
	// --json after the files, as the other commands allow.
	code, out, _ = runCmd(t, append(append([]string{"flow", "traces"}, flowFiles("ex5", "A", "B", "C")...), "--json")...)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var doc struct {
		Traces []struct {
			Tag          string   `json:"tag"`
			DurationNs   int64    `json:"durationNs"`
			CriticalPath []string `json:"criticalPath"`
			Messages     []struct{ ID, From string }
			TraceID      string `json:"traceId"`
			Spans        []struct {
				SpanID     string            `json:"spanId"`
				ParentID   string            `json:"parentId"`
				Node       string            `json:"node"`
				StartNs    int64             `json:"startNs"`
				EndNs      int64             `json:"endNs"`
				DurationNs int64             `json:"durationNs"`
				Attributes map[string]string `json:"attributes"`
			} `json:"spans"`
			Events []struct {
				Node        string `json:"node"`
				Type        string `json:"type"`
				Payload     string `json:"payload"`
				MonotonicNs int64  `json:"monotonicNs"`
			} `json:"events"`
		} `json:"traces"`
		Inputs struct {
			Nodes []struct {
				Node string `json:"node"`
			} `json:"nodes"`
			Traces int `json:"traces"`
		} `json:"inputs"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if doc.Inputs.Traces != 2 || len(doc.Traces) != 2 || doc.Traces[0].Tag != "PUT" || doc.Traces[1].Tag != "GET" ||
		len(doc.Traces[0].Events) != 25 || len(doc.Inputs.Nodes) != 3 || doc.Inputs.Nodes[2].Node != "C" ||
		doc.Traces[0].DurationNs != 10_000_000 || strings.Join(doc.Traces[0].CriticalPath, ",") != "A,B,C" ||
		doc.Traces[0].Events[1].MonotonicNs == 0 {
		t.Errorf("json: %+v", doc)
	}
	// The span tree of PUT: A's span, B's under it, C's under B's.
	if sp := doc.Traces[0].Spans; len(sp) != 3 || sp[0].Node != "A" || sp[0].ParentID != "" || sp[1].Node != "B" ||
		sp[1].ParentID != sp[0].SpanID || sp[2].ParentID != sp[1].SpanID || len(sp[1].SpanID) != 16 || len(doc.Traces[0].TraceID) != 32 ||
		sp[1].Attributes["message.id"] != "A|B|U0:8" || sp[1].Attributes["message.sent"] != "B|C|U0:3" ||
		sp[1].StartNs != 1700000000101000000 || sp[1].DurationNs != 2_100_000 {
		t.Errorf("span tree: %+v", sp)
	}
}

func TestFlowStatsCLI(t *testing.T) {
	files := flowFiles("ex5", "A", "B", "C")
	code, out, _ := runCmd(t, append([]string{"flow", "stats"}, files...)...)
	if code != 0 || !strings.HasPrefix(string(out), "\n************\n* MESSAGES *\n") || !strings.Contains(string(out), "\n* SERVICES *\n") ||
		!strings.Contains(string(out), "* INTERCEPTORS *\n****************\n\n**********\n* INPUTS *\n") {
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
				Tags          []string `json:"tags"`
				MeanLatencyNs *float64 `json:"meanLatencyNs"`
				Pairs         []struct {
					LatencyAToB struct {
						Count int64 `json:"count"`
						P99Ns int64 `json:"p99Ns"`
					} `json:"latencyAToB"`
				} `json:"pairs"`
			} `json:"tags"`
		} `json:"messages"`
		Services map[string]struct {
			MaxNs int64 `json:"maxNs"`
		} `json:"services"`
		Traces []struct {
			Tag          string `json:"tag"`
			ProcessingUs struct {
				Avg float64 `json:"avg"`
			} `json:"processingUs"`
		} `json:"traces"`
		Locks  *struct{} `json:"locks"`
		Inputs *struct{} `json:"inputs"`
	}
	if err := json.Unmarshal(out, &doc); err != nil || code != 0 {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	if len(doc.Messages.Tags) != 2 || doc.Messages.Tags[0].MeanLatencyNs == nil || *doc.Messages.Tags[0].MeanLatencyNs != 500000 ||
		doc.Messages.Tags[0].Pairs[0].LatencyAToB.Count != 1 || doc.Messages.Tags[0].Pairs[0].LatencyAToB.P99Ns != 500000 ||
		doc.Services["B"].MaxNs != 1_000_000 || len(doc.Traces) != 1 || doc.Traces[0].ProcessingUs.Avg != 4140 || doc.Locks != nil || doc.Inputs == nil {
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
	again = again[:bytes.Index(again, []byte("\n**********\n* INPUTS"))]
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
	// A JVM recording has no flow events: refused, naming the file, with
	// no report.
	jvm := "../../jfr/testdata/jdk17-sample-multichunk.jfr.gz"
	code, out, errOut = runCmd(t, "flow", "stats", flowExamples+"ex1/A.txt", jvm)
	if code != 1 || len(out) != 0 || !strings.Contains(string(errOut), jvm+": no flow events") {
		t.Errorf("JVM recording: exit %d, stdout %s, stderr %s", code, out, errOut)
	}
	// The edge inputs on which the reference tool hung or died.
	for _, ex := range []string{"edge_hang", "edge_nc_dup", "edge_loopback"} {
		if code, _, errOut := runCmd(t, append([]string{"flow", "stats"}, flowFiles(ex, "A", "B")...)...); code != 0 {
			t.Errorf("%s: exit %d, %s", ex, code, errOut)
		}
	}
	// No progress bar unless stderr is a terminal (here it is a file).
	if newProgressBar(os.Stderr, false) != nil && !isTerminal(t, os.Stderr) {
		t.Error("progress bar on a non-terminal")
	}
	if f, err := os.CreateTemp(t.TempDir(), "e"); err == nil && newProgressBar(f, false) != nil {
		t.Error("progress bar on a file")
	}
}

// TestFlowSameNodeCLI: two inputs of one node name are refused with an
// error that names both files, prefixed once with the command.
func TestFlowSameNodeCLI(t *testing.T) {
	a := flowExamples + "ex1/A.txt"
	b := filepath.Join(t.TempDir(), "A.txt")
	data, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, data, 0o666); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCmd(t, "flow", "stats", a, b)
	want := "flightrec flow: " + a + " and " + b + " are both node A: each node needs its own name\n"
	if code != 1 || string(errOut) != want {
		t.Errorf("exit %d, stderr %q; want 1, %q", code, errOut, want)
	}
}

// TestFlowDirectoryInputCLI: a directory given as an input is named
// once, as the other commands name it.
func TestFlowDirectoryInputCLI(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := runCmd(t, "flow", "stats", dir)
	if want := "flightrec flow: " + dir + ": is a directory\n"; code != 1 || string(errOut) != want {
		t.Errorf("exit %d, stderr %q; want 1, %q", code, errOut, want)
	}
}

// TestFlowGarbageInputCLI: a file that is neither format is named with
// both, not only as "not a span log" (a corrupt recording is one too).
func TestFlowGarbageInputCLI(t *testing.T) {
	path := filepath.Join(t.TempDir(), "n0.jfr")
	if err := os.WriteFile(path, []byte("\x7fELF\x02\x01\x01garbage\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCmd(t, "flow", "stats", path)
	want := "flightrec flow: " + path + ":1: neither a recording (no JFR magic at byte 0) nor a span log (its first line is <nanoTime>=<unixMillis>)\n"
	if code != 1 || string(errOut) != want {
		t.Errorf("exit %d, stderr %q; want 1, %q", code, errOut, want)
	}
}

func isTerminal(t *testing.T, f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// TestFlowTracesFilters: --tag, --node, --min-duration, --since and
// --until keep the matching traces of ex5 (PUT: A, B, C, 10 ms from
// 22:13:20.100; GET: C alone, 50 us from 22:13:20.200); --progress draws
// the bar on a non-terminal from the first pass on.
func TestFlowTracesFilters(t *testing.T) {
	files := flowFiles("ex5", "A", "B", "C")
	for _, c := range []struct {
		flags []string
		want  string // the traces' first lines
	}{
		{[]string{"--tag", "GET"}, "TRACE 1"},
		{[]string{"--tag", "PutKeyValueCommand"}, "TRACE 0"},
		{[]string{"--node", "B"}, "TRACE 0"},
		{[]string{"--node", "C"}, "TRACE 0,TRACE 1"},
		{[]string{"--min-duration", "1ms"}, "TRACE 0"},
		{[]string{"--since", "2023-11-14T22:13:20.15Z"}, "TRACE 1"},
		{[]string{"--until", "2023-11-14T22:13:20.15Z"}, "TRACE 0"},
		{[]string{"--tag", "GET", "--node", "B"}, ""},
	} {
		code, out, errOut := runCmd(t, append(append([]string{"flow", "traces"}, c.flags...), files...)...)
		var got []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "TRACE ") {
				got = append(got, l[:strings.IndexByte(l, ':')])
			}
		}
		if code != 0 || strings.Join(got, ",") != c.want {
			t.Errorf("%q: exit %d, traces %q, want %q; %s", c.flags, code, got, c.want, errOut)
		}
	}
	if code, _, errOut := runCmd(t, append([]string{"flow", "stats", "--tag", "GET"}, files...)...); code != 2 {
		t.Errorf("stats --tag: exit %d, %s", code, errOut)
	}
	// Bad filter values say what is wanted: --since quoted time.Parse's
	// layout ("cannot parse "yesterday" as "2006""), and a negative
	// --min-duration was taken.
	for _, c := range []struct{ flags, want string }{
		{"--since yesterday", `flightrec flow: --since "yesterday": want an RFC 3339 time, such as 2026-11-27T21:00:00Z or 2026-11-27T22:00:00.5+01:00` + "\n"},
		{"--until 2023-11-14", `flightrec flow: --until "2023-11-14": want an RFC 3339 time`},
		{"--min-duration -1ms", "flightrec flow: --min-duration -1ms: want a duration of 0 or more\n"},
	} {
		code, _, errOut := runCmd(t, append(append([]string{"flow", "traces"}, strings.Fields(c.flags)...), files...)...)
		if code != 2 || !strings.HasPrefix(string(errOut), c.want) {
			t.Errorf("traces %s: exit %d, stderr %q; want 2, %q", c.flags, code, errOut, c.want)
		}
	}
	code, _, errOut := runCmd(t, append([]string{"flow", "stats", "--progress"}, files...)...)
	if code != 0 || !strings.Contains(string(errOut), "[pass 1/2] [") || !strings.Contains(string(errOut), "MiB read") ||
		!strings.Contains(string(errOut), "[pass 2/2] [") || !strings.Contains(string(errOut), "100%") {
		t.Errorf("--progress: exit %d, stderr %q", code, errOut)
	}
}

// TestFlowExportCLI: flow export --otlp posts the traces to an OTLP/HTTP
// receiver (analysis/flow/otlp's tests check the spans themselves).
func TestFlowExportCLI(t *testing.T) {
	var posts int
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts++
		paths = append(paths, r.URL.Path)
	}))
	defer srv.Close()
	code, out, errOut := runCmd(t, append([]string{"flow", "export", "--otlp", srv.URL, "--tag", "PUT"}, flowFiles("ex5", "A", "B", "C")...)...)
	if code != 0 || posts != 1 || paths[0] != "/v1/traces" || !strings.HasPrefix(string(out), "exported 1 traces, 3 spans to "+srv.URL+"\n") {
		t.Errorf("exit %d, %d posts %v, stdout %s, stderr %s", code, posts, paths, out, errOut)
	}
	if code, _, errOut := runCmd(t, append([]string{"flow", "export"}, flowFiles("ex5", "A")...)...); code != 2 || !strings.Contains(string(errOut), "--otlp") {
		t.Errorf("export without --otlp: exit %d, %s", code, errOut)
	}
}

// TestFlowMemFlag: --mem takes IEC and JVM sizes, sets the garbage
// collector's limit for the merge and restores the previous one after.
func TestFlowMemFlag(t *testing.T) {
	for v, want := range map[string]int64{"512MiB": 512 << 20, "1GiB": 1 << 30, "256KiB": 256 << 10, "100m": 100 << 20, "4096": 4096, "0": 0} {
		if n, err := parseMemSize(v); err != nil || n != want {
			t.Errorf("parseMemSize(%q) = %d, %v; want %d", v, n, err, want)
		}
	}
	for _, v := range []string{"", "MiB", "-1MiB", "12XB", "1.5GiB", "99999999999TiB"} {
		if n, err := parseMemSize(v); err == nil {
			t.Errorf("parseMemSize(%q) = %d, want an error", v, n)
		}
	}
	before := debug.SetMemoryLimit(-1)
	code, _, errOut := runCmd(t, append([]string{"flow", "stats", "--mem", "12XB"}, flowFiles("ex1", "A", "B")...)...)
	if code != 2 || !strings.Contains(string(errOut), "--mem") {
		t.Errorf("--mem 12XB: exit %d, stderr %s; want a usage error", code, errOut)
	}
	code, _, errOut = runCmd(t, append([]string{"flow", "stats", "--mem", "64MiB"}, flowFiles("ex1", "A", "B")...)...)
	if code != 0 {
		t.Errorf("--mem 64MiB: exit %d, stderr %s", code, errOut)
	}
	if after := debug.SetMemoryLimit(-1); after != before {
		t.Errorf("memory limit %d after the command, want %d as before", after, before)
	}
}
