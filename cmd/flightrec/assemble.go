package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/flightrec/flightrec/internal/cli"
	"github.com/flightrec/flightrec/jfr"
)

var assembleCmd = &cli.Command{
	Name:      "assemble",
	UsageLine: "assemble DIR OUT",
	Short:     "join the chunk files of a disk repository into one recording (as jfr assemble)",
	Long: `
Assemble writes the chunks of the .jfr files in DIR, a disk repository
(a recording started with disk=true), in the order of their names (their
times), into one recording OUT.

Each file's chunks are read through, metadata, constant pools and records:
a chunk that is torn (the process was killed while writing it) or corrupt
is left out with a warning naming the file and byte offset, and the chunks
after it in the same file too. A chunk still being written is kept up to
its last flush and marked finished. OUT's last chunk is marked final.
OUT must not exist: as jfr assemble, assemble does not overwrite a file.`,
	Run: func(ctx context.Context, env *cli.Env, fs *flag.FlagSet, args []string) error {
		if len(args) != 2 {
			return cli.Usagef("expected a repository directory and an output file, got %d arguments", len(args))
		}
		return assemble(env.Stderr, args[0], args[1])
	},
}

func assemble(warn io.Writer, dir, out string) (err error) {
	if st, err := os.Stat(dir); err != nil {
		return err
	} else if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.jfr"))
	if err != nil {
		return err
	}
	slices.Sort(files)
	if len(files) == 0 {
		return fmt.Errorf("%s: no .jfr chunk files", dir)
	}
	// As jfr assemble, an existing OUT is refused, not overwritten: it may
	// be one of DIR's chunks or an earlier assembly of them. Refused before
	// DIR is read, and created after DIR is listed, OUT is never one of the
	// inputs (jfr assemble, listing after creating it, copies OUT into
	// itself).
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists: assemble does not overwrite a file", out)
	}
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(out)
		}
	}()
	var chunks [][]byte
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		good, err := readableChunks(data)
		if err != nil {
			fmt.Fprintf(warn, "flightrec assemble: warning: skipping the rest of %s: %v\n", name, err)
		}
		chunks = append(chunks, good...)
	}
	if len(chunks) == 0 {
		return fmt.Errorf("%s: no complete chunk", dir)
	}
	for i, c := range chunks {
		flags := uint16(jfr.FlagCompressedInts)
		if i == len(chunks)-1 {
			flags |= jfr.FlagFinalChunk
		}
		binary.BigEndian.PutUint16(c[66:], flags)
		if _, err := f.Write(c); err != nil {
			return err
		}
	}
	return f.Close()
}

// readableChunks returns the chunks of data that read through, up to the
// first that does not, and the error that stopped it. A chunk still being
// written is cut at its last flush and marked finished.
func readableChunks(data []byte) ([][]byte, error) {
	r := jfr.NewBytesReader(data, nil)
	var out [][]byte
	var recs [256]jfr.Record
	for {
		c, err := r.NextChunk()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		for !r.ChunkDone() {
			if _, err := r.ReadRecords(recs[:]); err != nil {
				return out, err
			}
		}
		chunk := data[c.Offset : c.Offset+c.Header.Size]
		chunk[64] = 0 // finished
		out = append(out, chunk)
	}
}
