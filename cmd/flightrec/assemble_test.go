package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/flightrec/flightrec/internal/testrec"
)

// TestAssemble joins a repository of one chunk per file, the last one
// torn: the complete chunks come out in name order, the last flagged
// final, with a warning naming the torn file and offset.
func TestAssemble(t *testing.T) {
	chunks := allTypesChunks(t)
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	os.Mkdir(repo, 0o755)
	// Names sort in time order; the files are written out of order.
	names := []string{"2026_11_24_10_00_02.000_000002.jfr", "2026_11_24_10_00_01.000_000001.jfr", "2026_11_24_10_00_03.000_000003.jfr"}
	os.WriteFile(filepath.Join(repo, names[0]), chunks[1], 0o600)
	os.WriteFile(filepath.Join(repo, names[1]), chunks[0], 0o600)
	os.WriteFile(filepath.Join(repo, names[2]), chunks[2][:len(chunks[2])/2], 0o600)
	os.WriteFile(filepath.Join(repo, "notes.txt"), []byte("not a chunk"), 0o600)
	out := filepath.Join(dir, "out.jfr")
	code, stdout, errOut := runCmd(t, "assemble", repo, out)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, errOut)
	}
	want := regexp.MustCompile(`^flightrec assemble: warning: skipping the rest of .*` + regexp.QuoteMeta(names[2]) + `: chunk 0, byte offset \d+: .*truncated.*\n$`)
	if !want.Match(errOut) {
		t.Errorf("stderr %q does not match %s", errOut, want)
	}
	got, _ := os.ReadFile(out)
	wantData := append(append([]byte(nil), chunks[0]...), chunks[1]...)
	binary.BigEndian.PutUint16(wantData[66:], 1)
	binary.BigEndian.PutUint16(wantData[len(chunks[0])+66:], 3)
	if !bytes.Equal(got, wantData) {
		t.Errorf("assembled %d bytes, want the first two chunks (%d bytes), the second final", len(got), len(wantData))
	}
	jfrSummary(t, out)

	// Nothing to join is an error.
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	if code, _, errOut := runCmd(t, "assemble", empty, out); code != 1 || !bytes.Contains(errOut, []byte("no .jfr chunk files")) {
		t.Errorf("empty repository: exit %d, %s", code, errOut)
	}
}

// allTypesChunks returns the three chunks of the all-types recording.
func allTypesChunks(t *testing.T) [][]byte {
	t.Helper()
	data := testrec.Bytes(t, "jdk17-alltypes.jfr.gz")
	var chunks [][]byte
	for off := int64(0); off+68 <= int64(len(data)); {
		size := int64(binary.BigEndian.Uint64(data[off+8:]))
		chunks = append(chunks, data[off:off+size])
		off += size
	}
	if len(chunks) != 3 {
		t.Fatalf("%d chunks, want 3", len(chunks))
	}
	return chunks
}

// TestAssembleOutputInRepository writes OUT into the repository it reads:
// the first run joins the repository's chunks, and a second run is refused,
// as jfr assemble refuses an existing file, instead of joining the
// repository and the first run's output (6 chunks). A run that fails
// leaves no OUT.
func TestAssembleOutputInRepository(t *testing.T) {
	chunks := allTypesChunks(t)
	repo := t.TempDir()
	for i, c := range chunks {
		os.WriteFile(filepath.Join(repo, fmt.Sprintf("2026_11_24_10_00_0%d.000_00000%d.jfr", i, i)), c, 0o600)
	}
	out := filepath.Join(repo, "out.jfr")
	if code, stdout, errOut := runCmd(t, "assemble", repo, out); code != 0 || len(errOut) != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, errOut)
	}
	want := bytes.Join(chunks, nil)
	binary.BigEndian.PutUint16(want[66:], 1)
	binary.BigEndian.PutUint16(want[len(chunks[0])+66:], 1)
	binary.BigEndian.PutUint16(want[len(chunks[0])+len(chunks[1])+66:], 3)
	if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
		t.Fatalf("assembled %d bytes, want the repository's 3 chunks (%d bytes)", len(got), len(want))
	}

	code, _, errOut := runCmd(t, "assemble", repo, out)
	if wantErr := "flightrec assemble: " + out + " already exists: assemble does not overwrite a file\n"; code != 1 || string(errOut) != wantErr {
		t.Errorf("second run: exit %d, stderr %q, want 1, %q", code, errOut, wantErr)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
		t.Errorf("second run: %s has %d bytes, want the first run's %d", out, len(got), len(want))
	}

	torn := t.TempDir()
	os.WriteFile(filepath.Join(torn, "1.jfr"), chunks[0][:1000], 0o600)
	out = filepath.Join(torn, "out.jfr")
	if code, _, errOut := runCmd(t, "assemble", torn, out); code != 1 || !bytes.Contains(errOut, []byte("no complete chunk")) {
		t.Errorf("torn repository: exit %d, %s", code, errOut)
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("torn repository: %s is left (%v)", out, err)
	}
}
