package testrec

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Dir returns the path of jfr/testdata.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "jfr", "testdata")
}

// Bytes returns the decompressed contents of jfr/testdata/name (a .jfr.gz
// file), failing the test if it cannot.
func Bytes(t testing.TB, name string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join(Dir(), name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// JFR returns the path of OpenJDK's jfr tool, skipping the test when it is
// not installed (CI installs it).
func JFR(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("jfr")
	if err != nil {
		t.Skip("jfr (OpenJDK) not on PATH")
	}
	return p
}

// RunJFR runs `jfr args...` and returns its standard output, failing the
// test unless it exits 0.
func RunJFR(t testing.TB, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(JFR(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if len(out) > 2000 {
			out = out[:2000]
		}
		t.Fatalf("jfr %v: %v\n%s\n%s", args, err, stderr.Bytes(), out)
	}
	return out
}

// OpenTempDir returns a temporary directory that every user may enter,
// for files another user runs or connects to; it is removed when the
// test ends.
func OpenTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "flightrec-open-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
