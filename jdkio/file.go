package jdkio

import (
	"io"
	"os"
	"unsafe"
)

// File is an os.File whose reads, writes and syncs are recorded as
// jdk.FileRead, jdk.FileWrite and jdk.FileForce events with its path and
// the byte counts. Open, Create, OpenFile and WrapFile make them; OSFile
// gives the os.File for the rest.
type File struct {
	f    *os.File
	path string
}

// Open opens the named file for reading, as os.Open.
func Open(name string) (*File, error) { return wrapOpened(os.Open(name)) }

// Create creates or truncates the named file, as os.Create.
func Create(name string) (*File, error) { return wrapOpened(os.Create(name)) }

// OpenFile opens the named file, as os.OpenFile.
func OpenFile(name string, flag int, perm os.FileMode) (*File, error) {
	return wrapOpened(os.OpenFile(name, flag, perm))
}

func wrapOpened(f *os.File, err error) (*File, error) {
	if err != nil {
		return nil, err
	}
	return WrapFile(f), nil
}

// WrapFile returns f recording its I/O under its name (f.Name(), the
// path it was opened by). A file without a name records nothing: an event
// that cannot say its path misleads.
func WrapFile(f *os.File) *File { return &File{f: f, path: f.Name()} }

// OSFile returns the wrapped file.
func (f *File) OSFile() *os.File { return f.f }

// Name returns the name of the file, as os.File.Name.
func (f *File) Name() string { return f.f.Name() }

// Stat returns the file's FileInfo, as os.File.Stat.
func (f *File) Stat() (os.FileInfo, error) { return f.f.Stat() }

// Seek sets the offset of the next Read or Write, as os.File.Seek.
func (f *File) Seek(offset int64, whence int) (int64, error) { return f.f.Seek(offset, whence) }

// Close closes the file, as os.File.Close.
func (f *File) Close() error { return f.f.Close() }

// Read reads from the file, as os.File.Read, recording a jdk.FileRead
// event if the type is enabled and the read lasts at least its threshold.
func (f *File) Read(b []byte) (int, error) {
	if !fileReadType.Enabled() || f.path == "" {
		return f.f.Read(b)
	}
	return f.readRecorded(b, -1)
}

// ReadAt reads from the file at offset off, as os.File.ReadAt, recording
// a jdk.FileRead event as Read does.
func (f *File) ReadAt(b []byte, off int64) (int, error) {
	if !fileReadType.Enabled() || f.path == "" {
		return f.f.ReadAt(b, off)
	}
	return f.readRecorded(b, off)
}

// readRecorded reads at off, or at the file's offset if off is negative.
func (f *File) readRecorded(b []byte, off int64) (n int, err error) {
	var ev fileRead
	fileReadType.Begin(&ev)
	if off < 0 {
		n, err = f.f.Read(b)
	} else {
		n, err = f.f.ReadAt(b, off)
	}
	if ev.ShouldCommit() {
		ev.Path, ev.BytesRead, ev.EndOfFile = f.path, int64(n), err == io.EOF
		ev.Commit()
	}
	return n, err
}

// Write writes to the file, as os.File.Write, recording a jdk.FileWrite
// event if the type is enabled and the write lasts at least its
// threshold.
func (f *File) Write(b []byte) (int, error) {
	if !fileWriteType.Enabled() || f.path == "" {
		return f.f.Write(b)
	}
	return f.writeRecorded(b, -1)
}

// WriteAt writes to the file at offset off, as os.File.WriteAt, recording
// a jdk.FileWrite event as Write does.
func (f *File) WriteAt(b []byte, off int64) (int, error) {
	if !fileWriteType.Enabled() || f.path == "" {
		return f.f.WriteAt(b, off)
	}
	return f.writeRecorded(b, off)
}

// WriteString writes s to the file, as Write.
func (f *File) WriteString(s string) (int, error) {
	return f.Write(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// writeRecorded writes at off, or at the file's offset if off is negative.
func (f *File) writeRecorded(b []byte, off int64) (n int, err error) {
	var ev fileWrite
	fileWriteType.Begin(&ev)
	if off < 0 {
		n, err = f.f.Write(b)
	} else {
		n, err = f.f.WriteAt(b, off)
	}
	if ev.ShouldCommit() {
		ev.Path, ev.BytesWritten = f.path, int64(n)
		ev.Commit()
	}
	return n, err
}

// Sync commits the file's contents and metadata to stable storage, as
// os.File.Sync (fsync), recording a jdk.FileForce event with metaData
// set if the type is enabled and the sync lasts at least its threshold.
func (f *File) Sync() error {
	if !fileForceType.Enabled() || f.path == "" {
		return f.f.Sync()
	}
	var ev fileForce
	fileForceType.Begin(&ev)
	err := f.f.Sync()
	if ev.ShouldCommit() {
		ev.Path, ev.MetaData = f.path, true
		ev.Commit()
	}
	return err
}
