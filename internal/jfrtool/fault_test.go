package jfrtool

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/flightrec/flightrec/internal/mmapfile"
	"github.com/flightrec/flightrec/jfr"
)

// TestWorkersSurviveTruncation maps a recording, collects a chunk's records
// as Print does, truncates the file, then runs the worker goroutines that
// decode (endTimes) and render (renderParallel) the chunk: their reads of
// the mapping fault, which must come back as errors, not crash the process.
func TestWorkersSurviveTruncation(t *testing.T) {
	data, err := os.ReadFile(recording(t, "jdk17-sample.jfr"))
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"endTimes", "renderParallel"} {
		t.Run(step, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "shrinks.jfr")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := mmapfile.Open(path)
			if errors.Is(err, mmapfile.ErrNotSupported) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			p := &printer{w: io.Discard, opts: PrintOptions{StackDepth: 5}, filter: newFilter("", "")}
			r := jfr.NewBytesReader(m.Data, nil)
			c, err := r.NextChunk()
			if err != nil {
				t.Fatal(err)
			}
			p.setChunk(c)
			for !r.ChunkDone() {
				n, err := r.ReadRecords(p.batch[:])
				for _, rec := range p.batch[:n] {
					if rec.TypeID > 1 {
						p.recs = append(p.recs, sortRec{rec: rec})
					}
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if len(p.recs) < 2*8192 {
				t.Fatalf("%d events: too few for two workers", len(p.recs))
			}
			if step == "renderParallel" {
				if err := endTimes(c, p.recs, 2); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
			if step == "endTimes" {
				err = endTimes(c, p.recs, 2)
			} else {
				err = p.renderParallel(c, newEmitter(p, FormatPretty), 2)
			}
			if !errors.Is(err, mmapfile.ErrChanged) {
				t.Fatalf("%s on a truncated mapping: %v, want %v", step, err, mmapfile.ErrChanged)
			}
		})
	}
}
