//go:build !unix

package ctlproto

import "io/fs"

// ProcessGone tells whether no process pid exists: unknown here, so
// connecting to its socket tells.
func ProcessGone(int) bool { return false }

// FileOwner returns the uid owning the file fi describes: none here.
func FileOwner(fs.FileInfo) (int, bool) { return 0, false }
