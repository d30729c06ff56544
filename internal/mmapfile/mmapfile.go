package mmapfile

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
)

// ErrNotSupported means this platform cannot map files.
var ErrNotSupported = errors.New("memory-mapped files are not supported on this platform")

// File is a file mapped read-only.
type File struct {
	Data  []byte // the file's contents; invalid after Close
	f     *os.File
	unmap func() error
}

// Close unmaps and closes the file.
func (m *File) Close() error {
	var err error
	if m.unmap != nil {
		err = m.unmap()
		m.unmap = nil
	}
	if cerr := m.f.Close(); err == nil {
		err = cerr
	}
	m.Data = nil
	return err
}

// Open maps the named file. It fails with ErrNotSupported (wrapped) where
// mapping is unavailable, and for files that are not regular files (pipes,
// devices), which callers read as streams.
func Open(name string) (*File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s: is a directory", name)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: %w: not a regular file", name, ErrNotSupported)
	}
	m := &File{f: f}
	if st.Size() == 0 {
		return m, nil
	}
	if err := mapFile(m, st.Size()); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
}

// Protect runs f with a memory fault raised while it reads a mapped file
// (the file shrank underneath) turned into an error. Faults are per
// goroutine: every goroutine that reads a mapping runs its reads through
// Protect, or one fault crashes the process.
func Protect(f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer guard(&err)
	return f()
}

// guard turns a recovered memory fault into an error in *err and
// re-raises any other panic.
func guard(err *error) {
	r := recover()
	if r == nil {
		return
	}
	if re, ok := r.(interface{ Addr() uintptr }); ok {
		*err = fmt.Errorf("%w (memory fault at %#x)", ErrChanged, re.Addr())
		return
	}
	panic(r)
}

// ErrChanged is the error Protect returns when the mapped file shrank
// while it was read.
var ErrChanged = errors.New("the file changed while it was read")
