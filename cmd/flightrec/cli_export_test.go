package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

func TestExportCLI(t *testing.T) {
	in := filepath.Join("..", "..", "jfr", "testdata", "jdk17-alltypes.jfr.gz")
	dir := t.TempDir()

	out := filepath.Join(dir, "cpu.pb.gz")
	code, _, stderr := runCmd(t, "export", "pprof", "--type", "test.AllTypes", "--type", "jdk.ExecutionSample", "--threads", in, "-o", out)
	if code != 0 {
		t.Fatalf("export pprof: %d %s", code, stderr)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(f)
	f.Close()
	if err != nil || p.CheckValid() != nil || len(p.Sample) == 0 {
		t.Fatalf("profile: %v, %d samples", err, len(p.Sample))
	}

	js := filepath.Join(dir, "trace.json")
	if code, _, stderr := runCmd(t, "export", "perfetto", "--format", "json", in, "-o", js); code != 0 {
		t.Fatalf("export perfetto: %d %s", code, stderr)
	}
	data, _ := os.ReadFile(js)
	var doc struct{ TraceEvents []json.RawMessage }
	if err := json.Unmarshal(data, &doc); err != nil || len(doc.TraceEvents) < 1000 {
		t.Fatalf("trace JSON: %v, %d events", err, len(doc.TraceEvents))
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "pprof", in}, "-o OUT is required"},
		{[]string{"export", "svg", in, "-o", out}, "unknown export format"},
		// The format left out: the file is taken for it, not said missing.
		{[]string{"export", in}, fmt.Sprintf("unknown export format %q: expected pprof or perfetto", in)},
		{[]string{"export", "perfetto", "--format", "xml", in, "-o", out}, "unknown --format"},
		{[]string{"export", "perfetto", "--threads", in, "-o", out}, "flags of export pprof"},
	} {
		code, _, stderr := runCmd(t, tc.args...)
		if code != 2 || !strings.Contains(string(stderr), tc.want) {
			t.Errorf("%v: exit %d, stderr %s", tc.args, code, stderr)
		}
	}
	// A bad file: status 1, the file named, no output left behind.
	bad := filepath.Join(dir, "bad.jfr")
	os.WriteFile(bad, []byte("not a recording at all, not even close"), 0o644)
	gone := filepath.Join(dir, "gone.pb.gz")
	code, _, stderr = runCmd(t, "export", "pprof", bad, "-o", gone)
	if code != 1 || !strings.Contains(string(stderr), "bad.jfr") {
		t.Errorf("bad input: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(gone); err == nil {
		t.Error("a failed export left its output file")
	}
}

func TestViewCLIRefusesNonLoopback(t *testing.T) {
	code, _, stderr := runCmd(t, "view", "--no-browser", "--http", "0.0.0.0:0", "x.jfr")
	if code != 2 || !strings.Contains(string(stderr), "loopback") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}
