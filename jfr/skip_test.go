package jfr

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestSkipDamagedChunk zeroes a record size in the middle of chunk 1 of a
// multi-chunk JDK recording: reading stops there with a FormatError,
// SkipDamagedChunk goes on at chunk 2, and every event of the other
// chunks is read. A truncated file cannot be skipped past.
func TestSkipDamagedChunk(t *testing.T) {
	data := openTestdata(t, "jdk17-sample-multichunk.jfr.gz")
	perChunk := map[int]int{}
	var recs []Record
	r := NewBytesReader(data, nil)
	for {
		rec, err := r.ReadRecord()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.TypeID > 1 {
			perChunk[r.Chunk().Index]++
			if r.Chunk().Index == 1 {
				recs = append(recs, rec)
			}
		}
	}
	if len(perChunk) < 3 {
		t.Fatalf("%d chunks", len(perChunk))
	}
	bad := bytes.Clone(data)
	off := recs[len(recs)/2].Offset
	bad[off] = 0
	for _, stream := range []bool{false, true} {
		var r *Reader
		if stream {
			r = NewReader(bytes.NewReader(bad), nil)
		} else {
			r = NewBytesReader(bad, nil)
		}
		got := map[int]int{}
		var damage []error
		for {
			rec, err := r.ReadRecord()
			if err == io.EOF {
				break
			}
			if err != nil {
				damage = append(damage, err)
				if !r.SkipDamagedChunk() {
					t.Fatalf("cannot skip %v", err)
				}
				continue
			}
			if rec.TypeID > 1 {
				got[r.Chunk().Index]++
			}
		}
		var fe *FormatError
		if len(damage) != 1 || !errors.As(damage[0], &fe) || fe.Chunk != 1 || fe.Offset != off {
			t.Errorf("stream %v: damage %v, want chunk 1 at %d", stream, damage, off)
		}
		for c, n := range perChunk {
			if c != 1 && got[c] != n {
				t.Errorf("stream %v: chunk %d: %d events, want %d", stream, c, got[c], n)
			}
		}
		if got[1] != len(recs)/2 {
			t.Errorf("stream %v: chunk 1: %d events before the damage, want %d", stream, got[1], len(recs)/2)
		}
	}
	r = NewBytesReader(data[:len(data)-10], nil)
	for {
		if _, err := r.ReadRecord(); err != nil {
			if err == io.EOF || r.SkipDamagedChunk() {
				t.Errorf("a truncated file: %v, skipped", err)
			}
			break
		}
	}
}
