package jfr

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// liveFlushes writes one chunk in n flushes, each adding an endpoint
// constant (key 100+i) and a go.AllKinds event referring to it, and
// returns the chunk's bytes and header after each flush.
func liveFlushes(t *testing.T, n int) (data, headers [][]byte) {
	t.Helper()
	md, events, buf, w := allKindsWriter(t, 0)
	allKinds, endpoint := class(t, md, "go.AllKinds"), class(t, md, "go.Endpoint")
	for i := range n {
		if i == 0 {
			writeAllKinds(t, w, events)
		}
		key := uint64(100 + i)
		must(t, w.AddConstant(endpoint, key, StructValue(endpoint, StringValue(fmt.Sprintf("host-%d", i)), IntValue(KindInt, int64(i)))))
		ev := append([]Value(nil), events[0]...)
		ev[allKinds.FieldIndex("endpoint")] = RefValue(endpoint, key)
		ev[allKinds.FieldIndex("i64")] = IntValue(KindLong, int64(i))
		must(t, w.WriteEvent(allKinds, ev))
		end := int64(testStartTicks + (i+1)*1000)
		if i < n-1 {
			must(t, w.Flushpoint(end))
		} else {
			must(t, w.EndChunk(end))
		}
		data = append(data, append([]byte(nil), buf.Bytes()...))
		headers = append(headers, append([]byte(nil), w.Header()...))
	}
	return data, headers
}

// wholeChunkEvents reads every event of a chunk's last flush (data, with
// header the chunk's header then), as a reader of the finished chunk does:
// what a live reader must give, flush by flush.
func wholeChunkEvents(t *testing.T, data, header []byte) []*Event {
	t.Helper()
	whole := bytes.Clone(data)
	copy(whole, header)
	var events []*Event
	r := NewBytesReader(whole, nil)
	for {
		ev := new(Event)
		err := r.ReadEvent(ev)
		if errors.Is(err, io.EOF) {
			return events
		}
		must(t, err)
		events = append(events, ev)
	}
}

// checkFlushEndpoint checks that the endpoint a go.AllKinds event of flush
// refers to, when it is the one that flush adds, resolves to that flush's
// host: constants are loaded at the flush that adds them.
func checkFlushEndpoint(t *testing.T, flush int, ev *Event) {
	t.Helper()
	if ep, _ := ev.Field("endpoint"); ep.Key() == uint64(100+flush) {
		if host, _ := ep.Resolve().Field("host"); host.String() != fmt.Sprintf("host-%d", flush) {
			t.Errorf("flush %d: endpoint %d resolves to host %q", flush, ep.Key(), host.String())
		}
	}
}

// TestLiveChunk reads a chunk flush by flush: each flush's events, and no
// other, with every value (constants resolved) what a reader of the whole
// chunk gets, the constants a flush adds resolved at that flush.
func TestLiveChunk(t *testing.T) {
	const n = 5
	data, headers := liveFlushes(t, n)
	want := wholeChunkEvents(t, data[n-1], headers[n-1])
	live := NewLiveChunk(nil)
	live.Start(0, 0)
	from, got := int64(HeaderSize), 0
	d := valueDiff{resolve: true}
	for i := range n {
		// The data's own header bytes are stale: Extend must not read them.
		stale := bytes.Clone(data[i])
		clear(stale[8:HeaderSize])
		c, err := live.Extend(headers[i], stale)
		must(t, err)
		must(t, live.LoadConstants())
		if c.Header.Size != int64(len(stale)) {
			t.Fatalf("flush %d: chunk size %d, want %d", i, c.Header.Size, len(stale))
		}
		r := live.Reader(from, int64(len(stale)))
		var ev Event
		inFlush := 0
		for {
			err := r.ReadEvent(&ev)
			if errors.Is(err, io.EOF) {
				break
			}
			must(t, err)
			if got >= len(want) {
				t.Fatalf("flush %d: more events than the whole chunk has", i)
			}
			for j := range ev.Fields {
				if s := d.diff(ev.Type.Fields[j].Name, want[got].Fields[j], ev.Fields[j]); s != "" {
					t.Errorf("flush %d, event %d: %s", i, got, s)
				}
			}
			if ev.Type.Name == "go.AllKinds" {
				checkFlushEndpoint(t, i, &ev)
			}
			got++
			inFlush++
		}
		if inFlush == 0 {
			t.Errorf("flush %d: no events", i)
		}
		from = int64(len(stale))
	}
	if got != len(want) {
		t.Errorf("read %d events flush by flush, the whole chunk has %d", got, len(want))
	}
	// A range reads its records only: those of the first two flushes.
	r := live.Reader(HeaderSize, int64(len(data[1])))
	two := 0
	var ev Event
	for r.ReadEvent(&ev) == nil {
		two++
	}
	// Flushes after the first have one event each.
	if two != len(want)-(n-2) {
		t.Errorf("read %d events in the range of the first two flushes, want %d", two, len(want)-(n-2))
	}
}

// TestLiveChunkErrors: data that is not a flush of the chunk the header
// describes gives a FormatError, never a panic.
func TestLiveChunkErrors(t *testing.T) {
	data, headers := liveFlushes(t, 2)
	for _, tc := range []struct {
		name         string
		header, data []byte
	}{
		{"short header", headers[0][:10], data[0]},
		{"data past the header's size", headers[0], data[1]},
		{"checkpoint not flushed", headers[1], data[1][:len(data[0])]},
		{"shrunk", headers[0], data[0][:HeaderSize+1]},
	} {
		live := NewLiveChunk(nil)
		live.Start(3, 1000)
		if tc.name == "shrunk" {
			_, err := live.Extend(headers[1], data[1])
			must(t, err)
		}
		_, err := live.Extend(tc.header, tc.data)
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Chunk != 3 || fe.Offset < 1000 {
			t.Errorf("%s: %v, want a FormatError in chunk 3 at offset >= 1000", tc.name, err)
		}
	}
}

// countingFile counts the bytes Follow reads in reads longer than a
// header (the polls read headers and record sizes).
type countingFile struct {
	*os.File
	bulk atomic.Int64
}

func (f *countingFile) ReadAt(b []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(b, off)
	if len(b) > HeaderSize+1 {
		f.bulk.Add(int64(n))
	}
	return n, err
}

// TestFollowReadsOnce: Follow of a chunk written in many flushes reads
// each byte of it once, not the whole chunk again at every flush.
func TestFollowReadsOnce(t *testing.T) {
	const n = 40
	data, headers := liveFlushes(t, n)
	path := filepath.Join(t.TempDir(), "live.jfr")
	f, err := os.Create(path)
	must(t, err)
	defer f.Close()
	rf, err := os.Open(path)
	must(t, err)
	defer rf.Close()
	cf := &countingFile{File: rf}
	var mu sync.Mutex
	var seen []int64
	flushed := make(chan struct{}, n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fw := follower{ctx: ctx, f: cf, opts: &FollowOptions{Poll: 2 * time.Millisecond, FinalGrace: 50 * time.Millisecond}, fn: func(r *Reader) error {
		var ev Event
		for {
			err := r.ReadEvent(&ev)
			if errors.Is(err, io.EOF) {
				flushed <- struct{}{}
				return nil
			}
			if err != nil {
				return err
			}
			if ev.Type.Name == "go.AllKinds" {
				v, _ := ev.Field("i64")
				mu.Lock()
				seen = append(seen, v.Int())
				mu.Unlock()
			}
		}
	}}
	done := make(chan error, 1)
	go func() { done <- fw.run() }()
	for i := range n {
		// As the JDK: the flush's bytes, then the header, in progress
		// until the last.
		h := bytes.Clone(headers[i])
		if i < n-1 {
			h[64] = 1
		} else {
			binary.BigEndian.PutUint16(h[66:], FlagCompressedInts|FlagFinalChunk)
		}
		prev := 0
		if i > 0 {
			prev = len(data[i-1])
		}
		if _, err := f.WriteAt(data[i][max(prev, HeaderSize):], int64(max(prev, HeaderSize))); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(h, 0); err != nil {
			t.Fatal(err)
		}
		select {
		case <-flushed:
		case <-ctx.Done():
			t.Fatalf("flush %d not followed", i)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 || seen[len(seen)-1] != n-1 {
		t.Fatalf("followed go.AllKinds i64 values %v, want the last %d", seen, n-1)
	}
	size := int64(len(data[n-1]))
	if got := cf.bulk.Load(); got > size {
		t.Errorf("Follow read %d bytes of a %d-byte chunk written in %d flushes, want each byte read once", got, size, n)
	}
}
