package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/internal/testrec"
)

// runCmd runs flightrec with args and returns its exit status, stdout and
// stderr.
func runCmd(t *testing.T, args ...string) (int, []byte, []byte) {
	t.Helper()
	dir := t.TempDir()
	stdout, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	code := run(context.Background(), args, stdout, stderr)
	stdout.Close()
	stderr.Close()
	o, _ := os.ReadFile(stdout.Name())
	e, _ := os.ReadFile(stderr.Name())
	checkPrefix(t, args, e)
	return code, o, e
}

// checkPrefix fails the test if an error line names the command twice
// ("flightrec flow: flow: ..."): the command's name is its one prefix, as
// the go command's are.
func checkPrefix(t *testing.T, args []string, stderr []byte) {
	t.Helper()
	if len(args) == 0 {
		return
	}
	for line := range strings.Lines(string(stderr)) {
		rest, ok := strings.CutPrefix(line, "flightrec "+args[0]+": ")
		if ok && strings.HasPrefix(rest, args[0]+": ") {
			t.Errorf("%q: doubled prefix: %s", args, line)
		}
	}
}

// truncatedRecording writes the 3-chunk all-types recording cut in the
// middle of its last chunk and returns its path and the offset where its
// last complete chunk ends.
func truncatedRecording(t *testing.T) (string, int64) {
	t.Helper()
	data := testrec.Bytes(t, "jdk17-alltypes.jfr.gz")
	var ends []int64
	for off := int64(0); off+68 <= int64(len(data)); {
		off += int64(binary.BigEndian.Uint64(data[off+8:]))
		ends = append(ends, off)
	}
	if len(ends) < 3 {
		t.Fatalf("%d chunks, want 3", len(ends))
	}
	path := filepath.Join(t.TempDir(), "trunc.jfr")
	if err := os.WriteFile(path, data[:ends[1]+1000], 0o644); err != nil {
		t.Fatal(err)
	}
	return path, ends[1]
}

func TestPrintTruncatedCLI(t *testing.T) {
	path, _ := truncatedRecording(t)
	code, out, errOut := runCmd(t, "print", "--json", path)
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	want := regexp.MustCompile(`^flightrec print: ` + regexp.QuoteMeta(path) + `: chunk 2, byte offset \d+: .*truncated.*\n$`)
	if !want.Match(errOut) {
		t.Errorf("stderr %q does not match %s", errOut, want)
	}
	// The complete chunks are printed as a whole JSON document.
	if !json.Valid(out) || !bytes.Contains(out, []byte(`"type": `)) {
		t.Errorf("stdout is not a JSON document with events (%d bytes)", len(out))
	}
	code, out, errOut = runCmd(t, "print", path)
	if code != 1 || !bytes.HasSuffix(out, []byte("}\n\n")) || len(errOut) == 0 {
		t.Errorf("human format: exit %d, %d bytes out, stderr %q", code, len(out), errOut)
	}
	code, _, errOut = runCmd(t, "metadata", path)
	if code != 1 || !bytes.Contains(errOut, []byte("chunk 2")) {
		t.Errorf("metadata: exit %d, stderr %q", code, errOut)
	}
}

func TestPrintUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"print"},
		{"print", "--stack-depth", "-1", "x.jfr"},
		{"print", "--stack-depth", "abc", "x.jfr"},
		{"print", "a.jfr", "b.jfr"},
		{"metadata"},
	} {
		if code, _, _ := runCmd(t, args...); code != 2 {
			t.Errorf("%q: exit status %d, want 2", args, code)
		}
	}
	// A bad flag value is named with the flag, and what it wants.
	for _, c := range []struct{ args, want string }{
		{"--stack-depth -1", "flightrec print: --stack-depth -1: want 0 or more\n"},
		{"--stack-depth abc", "flightrec print: --stack-depth \"abc\": want a whole number\n"},
	} {
		if code, _, errOut := runCmd(t, append(append([]string{"print"}, strings.Fields(c.args)...), "x.jfr")...); code != 2 || !bytes.HasPrefix(errOut, []byte(c.want)) {
			t.Errorf("print %s: exit %d, stderr %q; want 2, %q", c.args, code, errOut, c.want)
		}
	}
	// print reads a .gz file, --follow cannot: it says so.
	gz := filepath.Join(testrec.Dir(), "jdk17-alltypes.jfr.gz")
	if code, _, errOut := runCmd(t, "print", "--follow", gz); code != 1 || !bytes.Contains(errOut, []byte("print a .gz file without it")) {
		t.Errorf("print --follow of a .gz file: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut := runCmd(t, "print", filepath.Join(t.TempDir(), "missing.jfr"))
	if code != 1 || !bytes.HasPrefix(errOut, []byte("flightrec print: ")) {
		t.Errorf("missing file: exit %d, stderr %q", code, errOut)
	}
}

// TestPrintFollowFileErrors: print --follow names a missing file or a
// directory once, as print without it does; it said "F: open F: ..." and
// "D: read D: is a directory".
func TestPrintFollowFileErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.jfr")
	for _, c := range []struct{ path, want string }{
		{missing, "flightrec print: open " + missing + ": no such file or directory\n"},
		{dir, "flightrec print: " + dir + ": is a directory\n"},
	} {
		for _, args := range [][]string{{"print", "--follow", c.path}, {"print", c.path}} {
			if code, _, errOut := runCmd(t, args...); code != 1 || string(errOut) != c.want {
				t.Errorf("%q: exit %d, stderr %q; want 1, %q", args, code, errOut, c.want)
			}
		}
	}
}

// TestGzipHeaderCut: a .gz file cut inside its header says so, where it
// said only "unexpected EOF".
func TestGzipHeaderCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.jfr.gz")
	if err := os.WriteFile(path, []byte{0x1f, 0x8b, 8, 0, 0}, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"summary", path}, {"print", path}, {"view", "--no-browser", path}, {"flow", "stats", path}} {
		want := "flightrec " + args[0] + ": " + path + ": gzip header: unexpected EOF\n"
		if code, _, errOut := runCmd(t, args...); code != 1 || string(errOut) != want {
			t.Errorf("%q: exit %d, stderr %q; want 1, %q", args, code, errOut, want)
		}
	}
}
