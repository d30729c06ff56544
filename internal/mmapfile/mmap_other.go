//go:build !unix

package mmapfile

func mapFile(m *File, size int64) error { return ErrNotSupported }
