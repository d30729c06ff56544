package gzipped

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
)

// Is tells whether data starts with the gzip magic number.
func Is(data []byte) bool { return len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b }

// NewReader returns what br holds, decompressed if it starts with the gzip
// magic number (compressed is then true), else br itself with nothing
// consumed. A bad gzip header is an error that names the input, name.
func NewReader(name string, br *bufio.Reader) (r io.Reader, compressed bool, err error) {
	if head, _ := br.Peek(2); !Is(head) {
		return br, false, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, false, fmt.Errorf("%s: gzip header: %w", name, err)
	}
	return zr, true, nil
}
