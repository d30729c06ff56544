//go:build unix

package ctlproto

import (
	"errors"
	"io/fs"
	"syscall"
)

// ProcessGone tells whether no process pid exists.
func ProcessGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// FileOwner returns the uid owning the file fi describes.
func FileOwner(fi fs.FileInfo) (int, bool) {
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(s.Uid), true
	}
	return 0, false
}
