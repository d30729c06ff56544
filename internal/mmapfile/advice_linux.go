package mmapfile

import (
	"os"
	"syscall"
)

// madvPopulateRead is MADV_POPULATE_READ (Linux 5.14), which the syscall
// package does not name.
const madvPopulateRead = 22

// Populate maps the pages of Data[off:off+n] in one system call, which is
// far cheaper than a page fault for every page or two as they are read.
// Where the kernel cannot (before Linux 5.14), it asks for read-ahead.
func (m *File) Populate(off, n int64) {
	if b := m.pages(off, n); b != nil {
		if syscall.Madvise(b, madvPopulateRead) != nil {
			_ = syscall.Madvise(b, syscall.MADV_WILLNEED)
		}
	}
}

// Release drops the pages of Data[off:off+n] from the process (they stay
// in the page cache), so that reading a file of any size keeps the
// process's resident memory flat. A later read maps them again.
func (m *File) Release(off, n int64) {
	if b := m.pages(off, n); b != nil {
		_ = syscall.Madvise(b, syscall.MADV_DONTNEED)
	}
}

// pages returns the whole pages that cover Data[off:off+n], or nil.
func (m *File) pages(off, n int64) []byte {
	size := int64(len(m.Data))
	if off < 0 || n <= 0 || off >= size {
		return nil
	}
	ps := int64(os.Getpagesize())
	start := off &^ (ps - 1)
	end := min(size, (off+n+ps-1)&^(ps-1))
	return m.Data[start:end]
}
