package main

import (
	"bufio"
	"fmt"
	"os"

	"github.com/flightrec/flightrec/jfr"
)

// recording is an open recording file.
type recording struct {
	name string
	f    *os.File
	*jfr.Reader
}

// openRecording opens a recording for streaming.
func openRecording(name string) (*recording, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s: is a directory, not a recording", name)
	}
	return &recording{name: name, f: f, Reader: jfr.NewReader(bufio.NewReaderSize(f, 1<<20), nil)}, nil
}

func (r *recording) Close() error { return r.f.Close() }

// fileError prefixes an error with the file name, as every report of bad
// input names the file.
func (r *recording) fileError(err error) error {
	return fmt.Errorf("%s: %w", r.name, err)
}
