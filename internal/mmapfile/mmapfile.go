package mmapfile

import (
	"errors"
	"fmt"
	"os"
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

// Guard turns a memory fault raised while reading a mapped file (the file
// shrank underneath) into an error in *err. Use it as
//
//	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
//	defer mmapfile.Guard(&err)
//
// in the goroutine that reads the mapping.
func Guard(err *error) {
	r := recover()
	if r == nil {
		return
	}
	if re, ok := r.(interface{ Addr() uintptr }); ok {
		*err = fmt.Errorf("the file changed while it was read (memory fault at %#x)", re.Addr())
		return
	}
	panic(r)
}
