package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"

	"github.com/flightrec/flightrec/internal/mmapfile"
	"github.com/flightrec/flightrec/jfr"
)

// recording is an open recording file.
type recording struct {
	name string
	data []byte // the mapped file, or nil when streaming
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
func openRecordingWith(name string, opts *jfr.ReaderOptions) (*recording, error) {
	m, err := mmapfile.Open(name)
	if err == nil {
		return &recording{name: name, data: m.Data, Reader: jfr.NewBytesReader(m.Data, opts), close: m.Close}, nil
	}
	if !errors.Is(err, mmapfile.ErrNotSupported) {
		return nil, err
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return &recording{name: name, Reader: jfr.NewReader(bufio.NewReaderSize(f, 1<<20), opts), close: f.Close}, nil
}

func (r *recording) Close() error { return r.close() }

// fileError prefixes an error with the file name, as every report of bad
// input names the file.
func (r *recording) fileError(err error) error {
	return fmt.Errorf("%s: %w", r.name, err)
}
