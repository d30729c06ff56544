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

// iovecs are the pieces of a raw write.
type iovecs []syscall.Iovec

// maxIovecs is the most pieces one pwritev takes (UIO_MAXIOV).
const maxIovecs = 1024

// rawPwritev writes n bytes of v from byte k on at off in f with pwritev,
// issued without telling the scheduler (RawSyscall): the caller keeps its
// P, as it must while pinned. It returns how many bytes it wrote, which
// may be fewer than n (at most maxIovecs pieces a call). iov holds the
// pieces, for reuse.
func rawPwritev(f *os.File, iov *iovecs, v [][]byte, k, n, off int64) (int64, error) {
	vec := (*iov)[:0]
	for _, p := range v {
		if n == 0 || len(vec) == maxIovecs {
			break
		}
		if k >= int64(len(p)) {
			k -= int64(len(p))
			continue
		}
		m := min(n, int64(len(p))-k)
		e := syscall.Iovec{Base: &p[k]}
		e.SetLen(int(m))
		vec = append(vec, e)
		n -= m
		k = 0
	}
	*iov = vec
	if len(vec) == 0 {
		return 0, nil
	}
	var w uintptr
	err := rawFd(f, "write", func(fd uintptr) syscall.Errno {
		var errno syscall.Errno
		// pwritev's offset is two words, the high one 0 on 64-bit.
		w, _, errno = syscall.RawSyscall6(syscall.SYS_PWRITEV, fd, uintptr(unsafe.Pointer(&vec[0])), uintptr(len(vec)), uintptr(off), 0, 0)
		return errno
	})
	clear(vec) // keep no buffer alive
	return int64(w), err
}
