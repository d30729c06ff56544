package main

import (
	"bytes"
	"encoding/binary"
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
