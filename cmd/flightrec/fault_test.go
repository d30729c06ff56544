package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/internal/jfrtool"
	"github.com/flightrec/flightrec/internal/mmapfile"
	"github.com/flightrec/flightrec/internal/testrec"
)

// TestFileShrinksWhileRead maps a recording as print, metadata and summary
// open it, cuts the file to half, then reads it as each command does: the
// reads past the new end fault, which must give an error naming the file,
// not crash the process.
func TestFileShrinksWhileRead(t *testing.T) {
	data := testrec.Bytes(t, "jdk17-sample.jfr.gz")
	reads := map[string]func(*recording) error{
		"print": func(rec *recording) error {
			return jfrtool.Print(io.Discard, rec.Reader, jfrtool.FormatPretty, jfrtool.PrintOptions{StackDepth: 5})
		},
		"print --json": func(rec *recording) error {
			return jfrtool.Print(io.Discard, rec.Reader, jfrtool.FormatJSON, jfrtool.PrintOptions{StackDepth: 5})
		},
		"metadata": func(rec *recording) error {
			return jfrtool.PrintMetadata(io.Discard, rec.Reader, jfrtool.MetadataOptions{})
		},
		"summary": func(rec *recording) error {
			_, err := jfrtool.Summarize(rec.Reader)
			return err
		},
	}
	for name, read := range reads {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "shrinks.jfr")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			rec, err := openRecording(path)
			if err != nil {
				t.Fatal(err)
			}
			defer rec.Close()
			if rec.data == nil {
				t.Skip("the recording is streamed, not mapped, here")
			}
			if err := os.Truncate(path, int64(len(data)/2)); err != nil {
				t.Fatal(err)
			}
			err = rec.read(func() error { return read(rec) })
			if !errors.Is(err, mmapfile.ErrChanged) || !strings.HasPrefix(err.Error(), path+": ") {
				t.Fatalf("reading a recording cut while mapped: %v, want %q naming the file", err, mmapfile.ErrChanged)
			}
		})
	}
}
