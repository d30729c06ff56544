package mmapfile

import (
	"bytes"
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

// Reader reads a mapping as a bytes.Reader does, with a fault met by a
// read (the file shrank) returned as ErrChanged from that read, whichever
// goroutine makes it: for code that reads the mapping on goroutines of
// its own, which the caller's Protect does not cover.
type Reader struct{ r bytes.Reader }

// NewReader returns a Reader of data, a mapping (or any bytes).
func NewReader(data []byte) *Reader {
	r := &Reader{}
	r.r.Reset(data)
	return r
}

// Read reads as bytes.Reader.Read does.
func (r *Reader) Read(p []byte) (n int, err error) {
	if perr := Protect(func() error { n, err = r.r.Read(p); return nil }); perr != nil {
		return n, perr
	}
	return n, err
}

// ReadAt reads as bytes.Reader.ReadAt does; it may be called concurrently.
func (r *Reader) ReadAt(p []byte, off int64) (n int, err error) {
	if perr := Protect(func() error { n, err = r.r.ReadAt(p, off); return nil }); perr != nil {
		return n, perr
	}
	return n, err
}
