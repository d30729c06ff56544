package main

import (
	"path/filepath"
	"testing"
)

// TestOutputFlagErrors: an output that cannot be created is reported
// with the flag (or argument) that named it, and the system's reason,
// before any input is merged where the command can tell early.
func TestOutputFlagErrors(t *testing.T) {
	rec := "../../jfr/testdata/jdk17-sample-multichunk.jfr.gz"
	out := filepath.Join(t.TempDir(), "new")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"flow", "cut", "--message", "A|B|U0:1", "--out", "/dev/null/x", flowExamples + "ex1/A.txt"},
			"flightrec flow: --out /dev/null/x: mkdir /dev/null: not a directory\n"},
		{[]string{"export", "pprof", rec, "-o", "/dev/null/x"}, "flightrec export: -o /dev/null/x: not a directory\n"},
		{[]string{"export", "perfetto", rec, "-o", "/dev/null/x"}, "flightrec export: -o /dev/null/x: not a directory\n"},
		// The temporary file beside OUT is not named: the user gave OUT.
		{[]string{"import", rec, "/dev/null/x"}, "flightrec import: output /dev/null/x: not a directory\n"},
		{[]string{"demo", "--cluster=false", "--duration", "1ms", "--out", "/dev/null/x"}, "flightrec demo: --out /dev/null/x: not a directory\n"},
		{[]string{"flow", "cut", "--message", "A|B|U0:1", "--out", out + "/sub/dir", flowExamples + "ex1/A.txt"}, ""},
	} {
		code, _, errOut := runCmd(t, c.args...)
		if c.want == "" {
			// The output directory is made, parents and all.
			if code != 0 {
				t.Errorf("%q: exit %d, %s", c.args, code, errOut)
			}
			continue
		}
		if code != 1 || string(errOut) != c.want {
			t.Errorf("%q: exit %d, stderr %q; want 1, %q", c.args, code, errOut, c.want)
		}
	}
}
