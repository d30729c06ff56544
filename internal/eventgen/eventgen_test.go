package eventgen

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckedInUpToDate regenerates the project's generated files and
// compares them with the checked-in ones: go generate leaves them as they
// are.
func TestCheckedInUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("loads packages with go list")
	}
	for _, tc := range []struct {
		dir   string
		types []string
	}{
		{"../../event", []string{"genAll", "genTimed"}},
		{"../../recorder", []string{"benchEvent"}},
		{"../../event/testdata/inl", []string{"gsample"}},
	} {
		f, err := Generate(tc.dir, tc.types, "-type "+strings.Join(tc.types, ","))
		if err != nil {
			t.Fatal(err)
		}
		old, err := os.ReadFile(filepath.Join(f.Dir, f.Name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(old, f.Source) {
			t.Errorf("%s is out of date: run go generate ./...; it would be:\n%s", f.Name, f.Source)
		}
	}
}

func TestRejects(t *testing.T) {
	if testing.Short() {
		t.Skip("loads packages with go list")
	}
	for typ, want := range map[string]string{
		"notEvent": "bad.go:6:6: notEvent is not a struct embedding event.Instant or event.Timed first",
		"badField": "bad.go:10:2: field M of badField has type map[string]int, which an event cannot record",
		"generic":  "bad.go:13:6: generic is generic",
		"missing":  "no type missing in package",
		"blank":    "bad.go:24:2: blank has a blank field",
	} {
		_, err := Generate("testdata/bad", []string{typ}, "")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", typ, err, want)
		}
	}
}
