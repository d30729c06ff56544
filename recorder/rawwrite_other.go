//go:build !linux || !(amd64 || arm64)

package recorder

import (
	"errors"
	"os"
)

// rawWriteLinked tells whether pinned file writes bypass the scheduler.
const rawWriteLinked = false

// iovecs are the pieces of a raw write (none here).
type iovecs struct{}

func rawPwritev(*os.File, *iovecs, [][]byte, int64, int64, int64) (int64, error) {
	return 0, errors.New("internal error: no raw pwritev on this platform")
}

func rawFtruncate(*os.File, int64) error {
	return errors.New("internal error: no raw ftruncate on this platform")
}
