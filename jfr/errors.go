package jfr

import (
	"errors"
	"fmt"
)

// FormatError reports malformed or truncated recording data. It names the
// chunk (counting from 0) and the absolute byte offset in the file where the
// problem was found.
type FormatError struct {
	Chunk  int   // index of the chunk in the file
	Offset int64 // byte offset in the file
	Err    error
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("chunk %d, byte offset %d: %v", e.Chunk, e.Offset, e.Err)
}

func (e *FormatError) Unwrap() error { return e.Err }

// Sentinel errors, matched with errors.Is through a FormatError.
var (
	// ErrNotJFR means the data does not start with the JFR magic "FLR\0".
	ErrNotJFR = errors.New("not a JDK Flight Recorder file (bad magic)")
	// ErrTruncated means the data ends inside a chunk.
	ErrTruncated = errors.New("unexpected end of data (truncated recording)")
	// ErrVersion means a chunk version this reader does not know.
	ErrVersion = errors.New("unsupported chunk version")
	// ErrLimit means a size read from the file exceeds a configured limit.
	ErrLimit = errors.New("size exceeds reader limit")
)
