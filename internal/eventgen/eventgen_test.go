package eventgen

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
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

// TestGeneratedStaleFailsBuild: a generated file stops the build, at its
// own line, once the struct it was written for changes (the init check
// catches what the struct's type does not show: content and jfr tags).
func TestGeneratedStaleFailsBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("loads packages and builds")
	}
	f, err := Generate("testdata/stale", []string{"staleEv"}, "-type staleEv")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	src, err := os.ReadFile("testdata/stale/stale.go")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		path := filepath.Join(tmp, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	build := func(stale []byte) ([]byte, error) {
		gen, _ := filepath.Abs(filepath.Join(f.Dir, f.Name))
		orig, _ := filepath.Abs("testdata/stale/stale.go")
		overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {
			gen: write(f.Name, f.Source), orig: write("stale.go", stale),
		}})
		cmd := exec.Command("go", "build", "-o", os.DevNull, "-overlay", write("overlay.json", overlay), "./testdata/stale")
		return cmd.CombinedOutput()
	}
	if out, err := build(src); err != nil {
		t.Fatalf("the package with its generated file does not build: %v\n%s", err, out)
	}
	changed := bytes.Replace(src, []byte("N int64"), []byte("N int32"), 1)
	out, err := build(changed)
	if err == nil || !strings.Contains(string(out), f.Name) || !strings.Contains(string(out), "cannot convert") {
		t.Errorf("after a field changed type, the build gave %v:\n%s\nwant a conversion error in %s", err, out, f.Name)
	}
}
