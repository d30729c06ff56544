package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/flightrec/flightrec/internal/gzipped"
	"github.com/flightrec/flightrec/internal/mmapfile"
	"github.com/flightrec/flightrec/jfr"
)

// recording is an open recording file.
type recording struct {
	name string
	data []byte // the mapped file, or nil when streaming
	opts jfr.ReaderOptions
	*jfr.Reader
	close func() error
}

// openRecording opens a recording with the reader's default options.
func openRecording(name string) (*recording, error) {
	return openRecordingWith(name, nil)
}

// openRecordingWith opens a recording. A regular file is memory-mapped and
// read in place, which is both the fastest way and keeps the process's own
// memory flat whatever the file's size; anything else (a pipe, a platform
// without mmap) is streamed chunk by chunk.
//
// A gzip-compressed recording (recording.jfr.gz) is decompressed as it is
// streamed.
func openRecordingWith(name string, opts *jfr.ReaderOptions) (*recording, error) {
	m, err := mmapfile.Open(name)
	if err == nil {
		if !gzipped.Is(m.Data) {
			// The mapping holds one chunk's pages at a time.
			o := jfr.ReaderOptions{}
			if opts != nil {
				o = *opts
			}
			o.Pager = m
			return &recording{name: name, data: m.Data, opts: o, Reader: jfr.NewBytesReader(m.Data, &o), close: m.Close}, nil
		}
		m.Close()
	} else if !errors.Is(err, mmapfile.ErrNotSupported) {
		return nil, err
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	src, compressed, err := gzipped.NewReader(name, bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		f.Close()
		return nil, err
	}
	if compressed {
		src = bufio.NewReaderSize(src, 1<<20)
	}
	return &recording{name: name, Reader: jfr.NewReader(src, opts), close: f.Close}, nil
}

func (r *recording) Close() error { return r.close() }

// read runs f, which reads r, and names the file in its error. A mapped
// file that shrinks while f reads it makes an error too, not a crash.
func (r *recording) read(f func() error) error { return r.fileError(mmapfile.Protect(f)) }

// fileError prefixes an error with the file name, as every report of bad
// input names the file.
func (r *recording) fileError(err error) error { return fileError(r.name, err) }

// fileError prefixes a non-nil error with the file name.
func fileError(name string, err error) error {
	if err == nil {
		return nil
	}
	// The system's error names the file already: "open FILE: no such
	// file or directory" as the other commands say it, and "FILE: is a
	// directory" where it said "FILE: read FILE: is a directory".
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == name {
		if pe.Op == "open" {
			return err
		}
		err = pe.Err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// openPlainFile opens name if it is a regular file holding an uncompressed
// recording (or anything that is not gzip), for reading at offsets.
func openPlainFile(name string) (*os.File, int64, bool) {
	f, err := os.Open(name)
	if err != nil {
		return nil, 0, false
	}
	st, err := f.Stat()
	var magic [2]byte
	if err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
		f.Close()
		return nil, 0, false
	}
	if n, _ := f.ReadAt(magic[:], 0); gzipped.Is(magic[:n]) {
		f.Close()
		return nil, 0, false
	}
	return f, st.Size(), true
}
