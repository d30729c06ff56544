package jfr

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// followChunks returns 3 chunks (not final) of the all-kinds events and
// one go.Instant each, whose value is the chunk's index.
func followChunks(t *testing.T) [][]byte {
	const tps = 1_000_000_000
	md, events, buf, w := allKindsWriter(t, tps)
	inst := class(t, md, "go.Instant")
	var chunks [][]byte
	for c := range 3 {
		start := int64(testStartTicks + c*tps)
		if c > 0 {
			must(t, w.StartChunk(start))
		}
		writeAllKinds(t, w, events)
		must(t, w.WriteEvent(inst, []Value{IntValue(KindLong, start+1), IntValue(KindLong, int64(c))}))
		must(t, w.EndChunk(start+tps-1))
		must(t, w.Flush())
		chunks = append(chunks, append([]byte(nil), buf.Bytes()...))
		buf.Reset()
	}
	return chunks
}

// instantRecord returns the bytes of the chunk's go.Instant record.
func instantRecord(t *testing.T, chunk []byte) []byte {
	r := NewBytesReader(chunk, nil)
	for {
		rec, err := r.ReadRecord()
		if err != nil {
			t.Fatal(err)
		}
		if cl := r.Chunk().Metadata.Class(rec.TypeID); cl != nil && cl.Name == "go.Instant" {
			return chunk[rec.Offset : rec.Offset+rec.Size]
		}
	}
}

// TestFollow writes a recording step by step as a live writer does (a
// chunk in progress whose header size grows at each flush, a header being
// rewritten, a chunk appended in pieces, a final chunk) while Follow reads
// it: every event is handed over once, as soon as it is flushed.
func TestFollow(t *testing.T) {
	chunks := followChunks(t)
	path := filepath.Join(t.TempDir(), "live.jfr")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	var mu sync.Mutex
	var got []int64 // go.Instant values, in the order read
	allKinds := 0
	seen := func() []int64 {
		mu.Lock()
		defer mu.Unlock()
		return append([]int64(nil), got...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, path, &FollowOptions{Poll: 5 * time.Millisecond, FinalGrace: 300 * time.Millisecond}, func(r *Reader) error {
			var ev Event
			for {
				err := r.ReadEvent(&ev)
				if errors.Is(err, io.EOF) {
					return nil
				}
				if err != nil {
					return err
				}
				mu.Lock()
				if ev.Type.Name == "go.Instant" {
					got = append(got, ev.Fields[1].Int())
				} else {
					allKinds++
				}
				mu.Unlock()
			}
		})
	}()
	waitFor := func(want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for len(seen()) < want {
			if time.Now().After(deadline) {
				t.Fatalf("Follow read %v, want %d go.Instant", seen(), want)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	write := func(b []byte, off int64) {
		t.Helper()
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
	}
	setHeader := func(off int64, size int64, state byte, flags uint16) {
		var b [8]byte
		write([]byte{255}, off+64) // the guard while the fields change
		binary.BigEndian.PutUint64(b[:], uint64(size))
		write(b[:], off+8)
		binary.BigEndian.PutUint16(b[:2], flags)
		write(b[:2], off+66)
		write([]byte{state}, off+64)
	}

	// Chunk 0 in progress, flushed once. Then a record is written and the
	// header's size moved over it, with no checkpoint after it: not a
	// flush, so it waits until the chunk is left.
	c0 := chunks[0]
	extra := instantRecord(t, c0)
	write(c0, 0)
	setHeader(0, int64(len(c0)), 1, FlagCompressedInts)
	waitFor(1)
	write(extra, int64(len(c0)))
	size0 := int64(len(c0) + len(extra))
	setHeader(0, size0, 2, FlagCompressedInts)
	time.Sleep(50 * time.Millisecond)
	if n := len(seen()); n != 1 {
		t.Fatalf("read %d go.Instant; the record after the last checkpoint is not flushed", n)
	}
	setHeader(0, size0, 3, FlagCompressedInts)
	setHeader(0, size0, 0, FlagCompressedInts)
	// Chunk 1 appended in two writes, header last as a finished chunk.
	write(chunks[1][HeaderSize:], size0+HeaderSize)
	time.Sleep(20 * time.Millisecond)
	write(chunks[1][:HeaderSize], size0)
	waitFor(3)
	// Chunk 2, flagged final: Follow ends after FinalGrace.
	c2 := append([]byte(nil), chunks[2]...)
	binary.BigEndian.PutUint16(c2[66:], FlagCompressedInts|FlagFinalChunk)
	write(c2, size0+int64(len(chunks[1])))
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Follow did not end at the final chunk")
	}
	if g := seen(); len(g) != 4 || g[0] != 0 || g[1] != 0 || g[2] != 1 || g[3] != 2 {
		t.Errorf("go.Instant read %v, want [0 0 1 2]", g)
	}
	if want := 3 * len(allKindsEvents(t, testTypes(t))); allKinds != want {
		t.Errorf("read %d go.AllKinds, want %d", allKinds, want)
	}
}

// TestFollowCancel: Follow of a file that never gets data returns when
// the context ends; bad data ends it with a FormatError.
func TestFollowCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.jfr")
	os.WriteFile(path, nil, 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := Follow(ctx, path, nil, func(*Reader) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Follow of an empty file: %v", err)
	}
	// Fewer bytes than a header that cannot start one end it too, as
	// soon as they are read; those that may start one are waited for.
	for _, short := range []string{"hello, not a recording\n", "FLX"} {
		os.WriteFile(path, []byte(short), 0o644)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := Follow(ctx, path, nil, func(*Reader) error { return nil })
		cancel()
		if !errors.Is(err, ErrNotJFR) {
			t.Errorf("Follow of %q: %v, want %v", short, err, ErrNotJFR)
		}
	}
	for _, partial := range []string{"FLR", "\x00\x00\x00\x00 a hole"} {
		os.WriteFile(path, []byte(partial), 0o644)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err := Follow(ctx, path, nil, func(*Reader) error { return nil })
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Follow of %q: %v, want to wait for more", partial, err)
		}
	}
	bad := make([]byte, 200)
	copy(bad, "not a recording")
	os.WriteFile(path, bad, 0o644)
	var fe *FormatError
	if err := Follow(context.Background(), path, nil, func(*Reader) error { return nil }); !errors.As(err, &fe) || fe.Offset != 0 {
		t.Errorf("Follow of garbage: %v", err)
	}
}

// TestFollowGrowingChunk: a writer that keeps its open chunk finished and
// final (so the file is readable at every moment) and grows it by
// extending the file and covering the new space with a record no
// metadata declares, as flightrec's file sink does, is followed through
// the growth, also when Follow reads the file between the writer's
// filler and its header's new size.
func TestFollowGrowingChunk(t *testing.T) {
	c0 := append([]byte(nil), followChunks(t)[0]...)
	binary.BigEndian.PutUint16(c0[66:], FlagCompressedInts|FlagFinalChunk)
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
	// Grow: the file first, then a filler record over the new space, then
	// the header's size.
	const grow = 1000
	if err := f.Truncate(int64(len(c0) + grow)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	f.WriteAt([]byte{0xe8, 0x07, 0xe7, 0x07}, int64(len(c0))) // 1000 bytes of type 999
	// A writer can be descheduled between its two writes (CI caught it):
	// the filler after the chunk, not yet counted by its header, is then
	// neither a hole nor a reservation nor a chunk.
	time.Sleep(50 * time.Millisecond)
	var size [8]byte
	binary.BigEndian.PutUint64(size[:], uint64(len(c0)+grow))
	f.WriteAt(size[:], 8)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Follow did not end")
	}
	if len(got) != 1 || got[0] != 0 {
		t.Errorf("go.Instant read %v, want [0]", got)
	}
}
