package mmapfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// mapTemp writes data to a new file and maps it, skipping the test where
// files cannot be mapped. It returns the mapping and the file's path.
func mapTemp(t *testing.T, data []byte) (*File, string) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Open(name)
	if errors.Is(err, ErrNotSupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m, name
}

func TestOpen(t *testing.T) {
	want := []byte("FLR\x00 some bytes")
	m, name := mapTemp(t, want)
	dir := filepath.Dir(name)
	if string(m.Data) != string(want) {
		t.Errorf("Data = %q, want %q", m.Data, want)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if m, err := Open(empty); err != nil || len(m.Data) != 0 {
		t.Errorf("empty file: %v, %d bytes", err, len(m.Data))
	} else {
		m.Close()
	}
	if _, err := Open(dir); err == nil {
		t.Error("Open of a directory succeeded")
	}
	if _, err := Open(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

var readSink int

// A file truncated while mapped faults on access; Protect turns the fault
// into an error instead of a crash, in any goroutine.
func TestGuardTruncated(t *testing.T) {
	m, name := mapTemp(t, make([]byte, 1<<16))
	defer m.Close()
	if err := os.Truncate(name, 0); err != nil {
		t.Fatal(err)
	}
	read := func() error {
		for _, b := range m.Data[1<<15:] {
			readSink += int(b)
		}
		return nil
	}
	if err := Protect(read); !errors.Is(err, ErrChanged) {
		t.Fatalf("reading a truncated mapping: %v", err)
	}
	done := make(chan error)
	go func() { done <- Protect(read) }()
	if err := <-done; !errors.Is(err, ErrChanged) {
		t.Fatalf("reading a truncated mapping in another goroutine: %v", err)
	}
}

// Populate and Release keep the contents readable: released pages are
// mapped again from the page cache on the next read.
func TestPopulateRelease(t *testing.T) {
	want := make([]byte, 5*os.Getpagesize()+123)
	for i := range want {
		want[i] = byte(i * 7)
	}
	m, _ := mapTemp(t, want)
	defer m.Close()
	m.Populate(100, 3*int64(os.Getpagesize()))
	m.Release(0, int64(len(want)))
	m.Populate(int64(len(want))-10, 100) // past the end: clipped
	m.Release(-5, 10)                    // before the start: ignored
	if string(m.Data) != string(want) {
		t.Fatal("contents changed after Populate and Release")
	}
}

// A Reader of a mapping cut underneath returns ErrChanged from the read
// that meets the cut, on any goroutine, and reads what is left before it.
func TestReaderTruncated(t *testing.T) {
	m, name := mapTemp(t, make([]byte, 1<<16))
	defer m.Close()
	if err := os.Truncate(name, 1<<12); err != nil {
		t.Fatal(err)
	}
	r := NewReader(m.Data)
	done := make(chan error)
	go func() {
		if n, err := r.ReadAt(make([]byte, 1<<12), 0); n != 1<<12 || err != nil {
			done <- fmt.Errorf("read before the cut: %d bytes, %v", n, err)
			return
		}
		_, err := r.ReadAt(make([]byte, 100), 1<<15)
		done <- err
	}()
	if err := <-done; !errors.Is(err, ErrChanged) {
		t.Fatalf("ReadAt past the cut in another goroutine: %v, want %v", err, ErrChanged)
	}
	if _, err := io.Copy(io.Discard, r); !errors.Is(err, ErrChanged) {
		t.Fatalf("Read through the cut: %v, want %v", err, ErrChanged)
	}
}
