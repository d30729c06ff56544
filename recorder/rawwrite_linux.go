//go:build linux && (amd64 || arm64)

package recorder

import (
	"os"
	"syscall"
	"unsafe"
)

// rawWriteLinked tells whether pinned file writes bypass the scheduler.
const rawWriteLinked = true

// rawFtruncate sets f's size, as rawPwrite writes.
func rawFtruncate(f *os.File, size int64) error {
	return rawFd(f, "truncate", func(fd uintptr) syscall.Errno {
		_, _, errno := syscall.RawSyscall(syscall.SYS_FTRUNCATE, fd, uintptr(size), 0)
		return errno
	})
}

// rawFd runs call on f's descriptor until it is not interrupted.
func rawFd(f *os.File, op string, call func(fd uintptr) syscall.Errno) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		for errno = call(fd); errno == syscall.EINTR; errno = call(fd) {
		}
	}); err != nil {
		return err
	}
	if errno != 0 {
		return &os.PathError{Op: op, Path: f.Name(), Err: errno}
	}
	return nil
}

// rawPwrite writes b at off in f with pwrite, issued without telling the
// scheduler (RawSyscall): the caller keeps its P, as it must while pinned.
func rawPwrite(f *os.File, b []byte, off int64) (int, error) {
	var n uintptr
	err := rawFd(f, "write", func(fd uintptr) syscall.Errno {
		var errno syscall.Errno
		n, _, errno = syscall.RawSyscall6(syscall.SYS_PWRITE64, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(off), 0, 0)
		return errno
	})
	return int(n), err
}
