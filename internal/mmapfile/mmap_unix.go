//go:build unix

package mmapfile

import "syscall"

func mapFile(m *File, size int64) error {
	if int64(int(size)) != size {
		return ErrNotSupported
	}
	data, err := syscall.Mmap(int(m.f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return err
	}
	m.Data = data
	m.unmap = func() error { return syscall.Munmap(data) }
	return nil
}
