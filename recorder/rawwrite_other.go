//go:build !linux || !(amd64 || arm64)

package recorder

import (
	"errors"
	"os"
)

// rawWriteLinked tells whether pinned file writes bypass the scheduler.
const rawWriteLinked = false

func rawPwrite(*os.File, []byte, int64) (int, error) {
	return 0, errors.New("internal error: no raw pwrite on this platform")
}

func rawFtruncate(*os.File, int64) error {
	return errors.New("internal error: no raw ftruncate on this platform")
}
