package jfr

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// walkDepth bounds how deep walk follows references.
const walkDepth = 16

// walker touches every value reachable from an event, as a printer would,
// visiting each constant once: constant pools may refer to each other in
// cycles or in graphs that would take exponential time to expand.
type walker struct {
	seen map[constKey]bool
	sink int
}

type constKey struct {
	class *Class
	key   uint64
}

func (w *walker) walk(v Value, depth int) {
	if depth > walkDepth {
		return
	}
	switch v.Kind() {
	case KindRef:
		k := constKey{v.Class(), v.Key()}
		if w.seen[k] {
			return
		}
		w.seen[k] = true
		w.walk(v.Resolve(), depth+1)
	case KindString:
		w.sink += len(v.AppendText(nil))
	case KindStruct, KindArray:
		for _, e := range v.Elems() {
			w.walk(e, depth+1)
		}
	default:
		w.sink += int(v.Int()) + int(v.Float())
	}
}

// readAll reads every record and every event of data, and returns the number
// of events and the first error other than io.EOF. It walks every value of
// every event, following references.
func readAll(data []byte, opts *ReaderOptions) (int, error) {
	return readAllWalking(data, opts, 1)
}

// readAllWalking is readAll walking the values of every stride-th event only
// (the others are decoded but not followed).
func readAllWalking(data []byte, opts *ReaderOptions, stride int) (int, error) {
	r := NewReader(bytes.NewReader(data), opts)
	var ev Event
	n := 0
	w := walker{seen: map[constKey]bool{}}
	for {
		err := r.ReadEvent(&ev)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				return n, fmt.Errorf("error is not a *FormatError: %w", err)
			}
			return n, err
		}
		n++
		if n%stride != 0 {
			continue
		}
		clear(w.seen)
		for _, f := range ev.Fields {
			w.walk(f, 0)
		}
		_ = ev.StartTime()
		_ = ev.Duration()
	}
}

// FuzzReader checks that no input makes the reader panic or hang, that every
// error is a *FormatError with a position inside the input, and that a
// chunk size in a header cannot make it allocate more than the limit.
func FuzzReader(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The batch and the single-record paths agree, errors included.
		one, oerr := recordsOneByOne(data)
		many, merr := recordsInBatches(data, 5)
		if len(one) != len(many) || fmt.Sprint(oerr) != fmt.Sprint(merr) {
			t.Fatalf("ReadRecord gave %d records and %v, ReadRecords %d and %v", len(one), oerr, len(many), merr)
		}
		for i := range one {
			if one[i] != many[i] {
				t.Fatalf("record %d: %+v vs %+v", i, one[i], many[i])
			}
		}
		_, err := readAll(data, &ReaderOptions{MaxChunkSize: 64 << 20})
		var fe *FormatError
		if err != nil {
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FormatError", err)
			}
			if fe.Offset < 0 || fe.Offset > int64(len(data)) {
				t.Fatalf("error offset %d outside the %d-byte input: %v", fe.Offset, len(data), err)
			}
		}
	})
}

// fuzzSeeds returns a small recording written by the Writer, with
// truncations and bit flips of it.
func fuzzSeeds(t testing.TB) [][]byte {
	file := smallRecording(t)
	seeds := [][]byte{file, {}, []byte("FLR\x00"), []byte("not a recording at all")}
	for _, n := range []int{1, 4, 67, 68, 69, len(file) / 2, len(file) - 1} {
		seeds = append(seeds, file[:n])
	}
	for _, off := range []int{5, 11, 23, 31, 64, 67, 70, len(file) / 3, len(file) / 2, len(file) - 3} {
		b := bytes.Clone(file)
		b[off] ^= 0x40
		seeds = append(seeds, b)
	}
	return seeds
}

// smallRecording writes two chunks with an event type that uses strings,
// arrays, a struct and constant pools.
func smallRecording(t testing.TB) []byte {
	t.Helper()
	b := NewMetadataBuilder()
	if _, err := b.AddType(StructType{Name: "test.Point", Fields: []FieldType{{Name: "x", Type: "int"}, {Name: "y", Type: "int"}}}); err != nil {
		t.Fatal(err)
	}
	id, err := b.AddEvent(EventType{
		Name: "test.Fuzz", Label: "Fuzz", Timed: true, Thread: true,
		Fields: []FieldType{
			{Name: "text", Type: "java.lang.String"},
			{Name: "values", Type: "long", Array: true},
			{Name: "point", Type: "test.Point"},
			{Name: "ratio", Type: "double", ContentType: ContentPercentage()},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	md, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, &WriterOptions{StartNanos: 1_700_000_000_000_000_000, StartTicks: 1000})
	if err := w.SetMetadata(md); err != nil {
		t.Fatal(err)
	}
	ev := md.Class(id)
	thread := md.ClassByName("java.lang.Thread")
	point := md.ClassByName("test.Point")
	for chunk := 0; chunk < 2; chunk++ {
		if err := w.AddConstant(thread, 1, StructValue(thread,
			StringValue("main"), IntValue(KindLong, 7), StringValue("main"), IntValue(KindLong, 1), RefValue(md.ClassByName("jdk.types.ThreadGroup"), 0))); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			err := w.WriteEvent(ev, []Value{
				IntValue(KindLong, int64(2000+chunk*1000+i)), IntValue(KindLong, 50), RefValue(thread, 1),
				StringValue(fmt.Sprintf("event %d/%d é", chunk, i)),
				ArrayValue(md.ClassByName("long"), IntValue(KindLong, 1), IntValue(KindLong, -1)),
				StructValue(point, IntValue(KindInt, int64(i)), IntValue(KindInt, -3)),
				FloatValue(KindDouble, 0.25),
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := w.EndChunk(int64(2000 + chunk*1000 + 900)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the committed FuzzReader corpus")

// TestFuzzCorpus checks the committed FuzzReader corpus like the fuzzer does
// and, with -update-corpus, regenerates it: the writer's small recording and
// bit flips of it, and a JDK 17 chunk cut after 64 KiB (header, and the
// start of its checkpoint and metadata) with flips.
func TestFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzReader")
	if *updateCorpus {
		small := smallRecording(t)
		jdk := openTestdata(t, "jdk17-alltypes.jfr.gz")[:64<<10]
		files := map[string][]byte{
			"writer-two-chunks":       small,
			"writer-truncated-header": small[:50],
			"writer-truncated-middle": small[:len(small)/2],
			"jdk17-chunk-first-64k":   jdk,
			"jdk17-header-only":       jdk[:HeaderSize],
		}
		flip := func(name string, src []byte, off int, bit byte) {
			b := bytes.Clone(src)
			b[off] ^= bit
			files[name] = b
		}
		flip("writer-flip-chunk-size", small, 12, 0x10)
		flip("writer-flip-cp-offset", small, 23, 0x01)
		flip("writer-flip-metadata-offset", small, 31, 0x02)
		flip("writer-flip-state-255", small, 64, 0xff)
		flip("writer-flip-first-event", small, HeaderSize+1, 0x80)
		flip("writer-flip-last-byte", small, len(small)-1, 0x80)
		flip("jdk17-flip-chunk-size", jdk, 12, 0x10)
		flip("jdk17-flip-first-record", jdk, HeaderSize+3, 0x80)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range files {
			content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 10 {
		t.Fatalf("committed corpus has %d files", len(entries))
	}
}

// TestBitFlips flips bits all over a real multi-chunk JDK recording: every
// read must end cleanly, with a *FormatError or with no error.
func TestBitFlips(t *testing.T) {
	data := openTestdata(t, "jdk17-sample-multichunk.jfr.gz")
	step := len(data) / 150
	if testing.Short() {
		step = len(data) / 20
	}
	for off := 3; off < len(data); off += step {
		for _, bit := range []byte{0x01, 0x80} {
			data[off] ^= bit
			if _, err := readAllWalking(data, nil, 64); err != nil {
				var fe *FormatError
				if !errors.As(err, &fe) {
					t.Fatalf("flip at %d: %v is not a *FormatError", off, err)
				}
			}
			data[off] ^= bit
		}
	}
}

// TestReaderErrors checks that truncated and corrupt input gives a
// *FormatError at the right place, after the complete chunks.
func TestReaderErrors(t *testing.T) {
	file := smallRecording(t)
	full, err := readAll(file, nil)
	if err != nil || full != 6 {
		t.Fatalf("small recording: %d events, %v; want 6, nil", full, err)
	}
	r := NewReader(bytes.NewReader(file), nil)
	c, err := r.NextChunk()
	if err != nil {
		t.Fatal(err)
	}
	first := int(c.Header.Size)
	// The first chunk's size field (at byte 8) flipped to point past the
	// end of the file.
	sizeFlipped := bytes.Clone(file)
	sizeFlipped[12] ^= 1
	cases := []struct {
		name       string
		data       []byte
		events     int // read before the error
		target     error
		offset     int64
		wantChunks int
		text       string // in the error, if not ""
	}{
		{"empty", nil, 0, nil, 0, 0, ""},
		{"not jfr", []byte("PK\x03\x04 a zip file, not a recording......................................................"), 0, ErrNotJFR, 0, 0, ""},
		{"short header", file[:40], 0, ErrTruncated, 40, 0, ""},
		// The chunk's size field is at its byte 8.
		{"truncated first chunk", file[:first-10], 0, ErrTruncated, 8, 0,
			fmt.Sprintf("the chunk size field says %d bytes, and the file ends %d bytes into the chunk", first, first-10)},
		{"truncated second chunk", file[:len(file)-10], 3, ErrTruncated, int64(first + 8), 1,
			fmt.Sprintf("the chunk size field says %d bytes, and the file ends %d bytes into the chunk", len(file)-first, len(file)-first-10)},
		{"size past the end", sizeFlipped, 0, ErrTruncated, 8, 0,
			fmt.Sprintf("the chunk size field says %d bytes, and the file ends %d bytes into the chunk", first+1<<24, len(file))},
		{"garbage after chunks", append(bytes.Clone(file), "junk"...), 6, ErrNotJFR, int64(len(file)), 2, ""},
		{"garbage after chunks, longer than a header", append(bytes.Clone(file), make([]byte, 100)...), 6, ErrNotJFR, int64(len(file)), 2, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, err := readAll(c.data, nil)
			if err == nil {
				t.Fatalf("no error; read %d events", n)
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("%v is not a *FormatError", err)
			}
			if c.target != nil && !errors.Is(err, c.target) {
				t.Errorf("error %v is not %v", err, c.target)
			}
			if fe.Offset != c.offset {
				t.Errorf("offset %d, want %d (%v)", fe.Offset, c.offset, err)
			}
			if !strings.Contains(err.Error(), c.text) {
				t.Errorf("error %q does not say %q", err, c.text)
			}
			if fe.Chunk != c.wantChunks {
				t.Errorf("chunk %d, want %d (%v)", fe.Chunk, c.wantChunks, err)
			}
			if n != c.events {
				t.Errorf("%d events before the error, want %d", n, c.events)
			}
		})
	}
}

// TestInProgressChunk reads a chunk whose writer had not finished it: the
// events up to its last flush (the header's size) are read and the bytes
// after it, not yet flushed, are ignored.
func TestInProgressChunk(t *testing.T) {
	file := smallRecording(t)
	r := NewReader(bytes.NewReader(file), nil)
	c, err := r.NextChunk()
	if err != nil {
		t.Fatal(err)
	}
	first := file[:c.Header.Size]
	for _, state := range []byte{1, 17, 254, 255} {
		b := bytes.Clone(first)
		b[64] = state
		b = append(b, "half-written events after the last flush"...)
		eachReader(b, func(name string, rd *Reader) {
			n, err := readToEnd(rd)
			if err != nil {
				t.Fatalf("state %d, %s: %v", state, name, err)
			}
			if n != 3 {
				t.Errorf("state %d, %s: %d events, want 3", state, name, n)
			}
			if rd.Chunk().Header.Finished() {
				t.Errorf("state %d: chunk reported finished", state)
			}
		})
	}
}

// eachReader calls f with a Reader of b over an io.Reader ("stream") and
// one in place ("bytes").
func eachReader(b []byte, f func(name string, rd *Reader)) {
	f("stream", NewReader(bytes.NewReader(b), nil))
	f("bytes", NewBytesReader(b, nil))
}

// readToEnd reads rd to its end: how many events it read, and the
// error that stopped it (nil at the end of the data).
func readToEnd(rd *Reader) (int, error) {
	var ev Event
	for n := 0; ; n++ {
		if err := rd.ReadEvent(&ev); err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return n, err
		}
	}
}

// TestChunkAfterOpenChunk: a chunk that follows one still being written
// (chunk files joined, or the state byte flipped) is read, as jfr does,
// where bytes that start no chunk there are taken for the open chunk's
// records after its last flush.
func TestChunkAfterOpenChunk(t *testing.T) {
	file := smallRecording(t)
	b := bytes.Clone(file)
	b[64] = 1 // the first chunk in progress
	eachReader(b, func(name string, rd *Reader) {
		if n, err := readToEnd(rd); err != nil || n != 6 {
			t.Errorf("%s: %d events, %v; want the 6 of both chunks", name, n, err)
		}
	})
	spans, err := ScanChunksAt(bytes.NewReader(b), int64(len(b)), nil)
	if err != nil || len(spans) != 2 {
		t.Errorf("ScanChunksAt: %d chunks, %v; want 2", len(spans), err)
	}
	// A tail that starts like a chunk but is none is the open chunk's.
	r := NewReader(bytes.NewReader(file), nil)
	c, err := r.NextChunk()
	if err != nil {
		t.Fatal(err)
	}
	first := bytes.Clone(file[:c.Header.Size])
	first[64] = 1
	tail := append(first, "FLR\x00 and half-written records"...)
	if n, err := readAll(tail, nil); err != nil || n != 3 {
		t.Errorf("open chunk and a tail: %d events, %v; want 3, nil", n, err)
	}
	if spans, err := ScanChunksAt(bytes.NewReader(tail), int64(len(tail)), nil); err != nil || len(spans) != 1 {
		t.Errorf("ScanChunksAt of an open chunk and a tail: %d chunks, %v; want 1, nil", len(spans), err)
	}
}

// zeroTail is a large file of one bad chunk header and zeros after it.
type zeroTail struct{ head []byte }

func (z zeroTail) ReadAt(b []byte, off int64) (int, error) {
	clear(b)
	if off < int64(len(z.head)) {
		copy(b, z.head[off:])
	}
	return len(b), nil
}

// TestScanBadHeaderReadsHeader: ScanChunksAt reports a bad first header as
// a Reader does, reading the header only, not the 1 GiB after it.
func TestScanBadHeaderReadsHeader(t *testing.T) {
	head := append([]byte("FLR\x00"), make([]byte, HeaderSize)...)
	head[5] = 99 // major version 99
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ScanChunksAt(zeroTail{head}, 1<<30, nil)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a bad header scanned without error")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("ScanChunksAt allocated %d bytes to report %v", got, err)
	}
}
