//go:build !linux

package mmapfile

// Populate does nothing here: pages are mapped as they are read.
func (m *File) Populate(off, n int64) {}

// Release does nothing here: the pages stay mapped until Close.
func (m *File) Release(off, n int64) {}
