package jfr

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/flightrec/flightrec/internal/testrec"
)

// countEvents reads data with our reader and counts its events.
func countEvents(t *testing.T, data []byte) (events, chunks int) {
	t.Helper()
	r := NewBytesReader(data, nil)
	events, err := readToEnd(r)
	if err != nil {
		t.Fatal(err)
	}
	return events, r.Chunk().Index + 1
}

// padTo appends a FillerType record to chunk so that it ends at a multiple
// of ReservePage, and sets its size.
func padTo(chunk []byte) []byte {
	pad := ReservePage - len(chunk)%ReservePage
	var fh [FillerHeaderSize]byte
	PutFillerHeader(fh[:], int64(pad))
	chunk = append(chunk, fh[:]...)
	chunk = append(chunk, make([]byte, pad-FillerHeaderSize)...)
	binary.BigEndian.PutUint64(chunk[8:], uint64(len(chunk)))
	return chunk
}

// TestReservation reads reservation pages after a chunk (each an empty
// chunk) and inside it (records readers skip), and a short reserved chunk:
// the events are the chunk's alone, for our reader and for jfr summary.
func TestReservation(t *testing.T) {
	c0 := followChunks(t)[0]
	h := header(t, c0, 0)
	clock := ClockOf(&h)
	want, _ := countEvents(t, c0)

	page := AppendReservation(nil, clock, 1)
	if len(page) != ReservePage || !IsReservation(page) || IsReservation(c0) {
		t.Fatalf("a page is %d bytes, IsReservation(page) %v, IsReservation(chunk) %v", len(page), IsReservation(page), IsReservation(c0))
	}
	short := AppendReserved(nil, clock, ReservedMinSize)
	if len(short) != ReservedMinSize || !IsReservation(short) {
		t.Fatalf("a reserved chunk of %d bytes is %d bytes, IsReservation %v", ReservedMinSize, len(short), IsReservation(short))
	}

	after := AppendReservation(append([]byte(nil), c0...), clock, 3)
	after = append(after, short...)
	inside := AppendReservation(padTo(append([]byte(nil), c0...)), clock, 3)
	binary.BigEndian.PutUint64(inside[8:], uint64(len(inside)))
	many := AppendReservation(append([]byte(nil), c0...), clock, 4096)
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		data   []byte
		chunks int
	}{{"after", after, 5}, {"inside", inside, 1}, {"many", many, 4097}} {
		events, chunks := countEvents(t, tc.data)
		if events != want || chunks != tc.chunks {
			t.Errorf("%s: %d events in %d chunks, want %d in %d", tc.name, events, chunks, want, tc.chunks)
		}
		if _, err := exec.LookPath("jfr"); err == nil && tc.name != "many" {
			path := filepath.Join(dir, tc.name+".jfr")
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			testrec.RunJFR(t, "summary", path)
		}
	}
}

// TestFollowReservation grows a chunk as a writer that keeps its file
// readable does: reservation pages after the file's end, then the chunk's
// header over them, then a record in the space: Follow takes the pages
// for the chunk's room, not for chunks that follow, and hands over the
// record.
func TestFollowReservation(t *testing.T) {
	c0 := padTo(append([]byte(nil), followChunks(t)[0]...))
	binary.BigEndian.PutUint16(c0[66:], FlagCompressedInts|FlagFinalChunk)
	h := header(t, c0, 0)
	inst := append([]byte(nil), instantRecord(t, c0)...)
	inst[len(inst)-1] = 1 // the next chunk index: the value of the record added
	path := filepath.Join(t.TempDir(), "growing.jfr")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write(c0)
	var mu sync.Mutex
	var got []int64
	done := make(chan error, 1)
	go func() {
		done <- Follow(context.Background(), path, &FollowOptions{Poll: 5 * time.Millisecond, FinalGrace: 500 * time.Millisecond}, func(r *Reader) error {
			var ev Event
			for {
				err := r.ReadEvent(&ev)
				if errors.Is(err, io.EOF) {
					return nil
				}
				if err != nil {
					return err
				}
				if ev.Type.Name == "go.Instant" {
					mu.Lock()
					got = append(got, ev.Fields[1].Int())
					mu.Unlock()
				}
			}
		})
	}()
	time.Sleep(50 * time.Millisecond)
	end := int64(len(c0))
	pages := AppendReservation(nil, ClockOf(&h), 2)
	f.WriteAt(pages, end)
	time.Sleep(100 * time.Millisecond) // Follow looks at the file meanwhile
	var size [8]byte
	binary.BigEndian.PutUint64(size[:], uint64(end+int64(len(pages))))
	f.WriteAt(size[:], 8)
	// The record goes where the pages are, followed by a filler to the end.
	rec := append(inst, make([]byte, FillerHeaderSize)...)
	PutFillerHeader(rec[len(inst):], int64(len(pages)-len(inst)))
	f.WriteAt(rec[len(inst):], end+int64(len(inst)))
	f.WriteAt(inst, end)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Follow did not end")
	}
	if len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Errorf("go.Instant read %v, want [0 1]", got)
	}
}
