package testrec

import (
	"compress/gzip"
	"io"
	"os"
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
