package recorder

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/flightrec/flightrec/internal/batch"
)

// TestChunksCutBySize records 600,000 events (about 8 MB) to a file with
// 1 MiB chunks, in 20 rounds each ended by a flush (about 420 KB): the
// file must hold several chunks, each cut once it reached the size (so
// made of several flushes, not cut at every one), and none past it by
// more than a flush.
func TestChunksCutBySize(t *testing.T) {
	const maxSize = 1 << 20
	path := filepath.Join(t.TempDir(), "cut.jfr")
	rec, err := Start(WithFile(path), WithSettings(Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}}), WithMaxChunkSize(maxSize))
	if err != nil {
		t.Fatal(err)
	}
	for round := range 20 {
		emitCounted(30_000, round*30_000)
		theSession.flushNow()
	}
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := readEvents(t, data)["test.Counted"]; n != 600_000 {
		t.Fatalf("%d events, want 600000", n)
	}
	// A flush holds at most a round, or a third of the buffers when the
	// flusher runs first.
	slack := max(int64(len(data))/20, int64(bufferCount())*batch.BufferSize/3)
	var sizes []int64
	for off := int64(0); off < int64(len(data)); {
		if int64(len(data))-off < 16 {
			t.Fatalf("%d bytes after the chunks at %d", int64(len(data))-off, off)
		}
		n := int64(binary.BigEndian.Uint64(data[off+8:]))
		if n <= 0 || off+n > int64(len(data)) {
			t.Fatalf("chunk at %d: size %d in a file of %d bytes", off, n, len(data))
		}
		sizes = append(sizes, n)
		off += n
	}
	t.Logf("chunk sizes %v", sizes)
	if len(sizes) < 3 {
		t.Fatalf("%d chunks of %v bytes for a maximum of %d", len(sizes), sizes, maxSize)
	}
	for i, n := range sizes {
		if i < len(sizes)-1 && n < maxSize {
			t.Errorf("chunk %d of %d: %d bytes, cut before it reached %d", i, len(sizes), n, maxSize)
		}
		if n > maxSize+slack {
			t.Errorf("chunk %d: %d bytes, past %d and a flush (%d)", i, n, maxSize, slack)
		}
	}
}
