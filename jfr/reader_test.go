package jfr

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/flightrec/flightrec/internal/testrec"
)

// openTestdata returns the decompressed bytes of a gzipped test recording.
func openTestdata(t testing.TB, name string) []byte { return testrec.Bytes(t, name) }

// The event counts are those of the JDK's RecordingFile API (recordings
// README and jfr-format.md §9).
func TestReadJDKRecordings(t *testing.T) {
	cases := []struct {
		file           string
		chunks, events int
		records        int
	}{
		{"jdk17-sample.jfr.gz", 1, 236332, 236381},
		{"jdk17-sample-multichunk.jfr.gz", 7, 214715, 214838},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			data := openTestdata(t, c.file)
			events := 0
			if got := readEvents(t, data, func(*Event) { events++ }); got != c.chunks {
				t.Errorf("chunks = %d, want %d", got, c.chunks)
			}
			if events != c.events {
				t.Errorf("events = %d, want %d", events, c.events)
			}
			r := NewReader(bytesReader(data), nil)
			records := 0
			for {
				_, err := r.ReadRecord()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				records++
			}
			if records != c.records {
				t.Errorf("records = %d, want %d", records, c.records)
			}
		})
	}
}

// recordsOneByOne and recordsInBatches list the records of data with
// ReadRecord and with ReadRecords; both stop at the first error.
func recordsOneByOne(data []byte) ([]Record, error) {
	r := NewBytesReader(data, nil)
	var out []Record
	for {
		rec, err := r.ReadRecord()
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
}

func recordsInBatches(data []byte, size int) ([]Record, error) {
	r := NewBytesReader(data, nil)
	batch := make([]Record, size)
	var out []Record
	for {
		n, err := r.ReadRecords(batch)
		out = append(out, batch[:n]...)
		if err != nil {
			return out, err
		}
	}
}

func TestReadRecordsMatchesReadRecord(t *testing.T) {
	for _, name := range []string{"jdk17-sample-multichunk.jfr.gz", "jdk25-alltypes.jfr.gz"} {
		data := openTestdata(t, name)
		want, werr := recordsOneByOne(data)
		for _, size := range []int{1, 7, 512} {
			got, gerr := recordsInBatches(data, size)
			if !errors.Is(gerr, io.EOF) || !errors.Is(werr, io.EOF) {
				t.Fatalf("%s: errors %v, %v", name, gerr, werr)
			}
			if len(got) != len(want) {
				t.Fatalf("%s, batches of %d: %d records, want %d", name, size, len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s, batches of %d: record %d = %+v, want %+v", name, size, i, got[i], want[i])
				}
			}
		}
	}
}

// TestDecodeEventLazy: an event DecodeEventLazy prepares has the values
// DecodeEvent gives once a field is asked for, and a corrupt record's
// failure is reported by Err.
func TestDecodeEventLazy(t *testing.T) {
	data := openTestdata(t, "jdk17-sample.jfr.gz")
	r := NewBytesReader(data, nil)
	var eager, lazy Event
	n := 0
	for n < 20000 {
		rec, err := r.ReadRecord()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		c := r.Chunk()
		if rec.TypeID < 2 || c.Metadata.Class(rec.TypeID) == nil {
			continue
		}
		if err := c.DecodeEvent(rec, &eager); err != nil {
			t.Fatal(err)
		}
		if err := c.DecodeEventLazy(rec, &lazy); err != nil {
			t.Fatal(err)
		}
		if lazy.Fields != nil || lazy.Type != eager.Type || lazy.Offset != eager.Offset {
			t.Fatalf("record at %d: lazy event before a field is asked for: %d fields, type %v", rec.Offset, len(lazy.Fields), lazy.Type.Name)
		}
		if lazy.StartTicks() != eager.StartTicks() || lazy.DurationTicks() != eager.DurationTicks() || lazy.Err() != nil {
			t.Fatalf("record at %d: start %d, duration %d, err %v; want %d, %d", rec.Offset, lazy.StartTicks(), lazy.DurationTicks(), lazy.Err(), eager.StartTicks(), eager.DurationTicks())
		}
		for i, f := range eager.Type.Fields {
			v, _ := lazy.Field(f.Name)
			w := eager.Fields[i]
			if got, want := fmt.Sprint(v.Kind(), v.Uint(), v.String(), v.Len()), fmt.Sprint(w.Kind(), w.Uint(), w.String(), w.Len()); got != want {
				t.Fatalf("record at %d: %s = %s, want %s", rec.Offset, f.Name, got, want)
			}
		}
		n++
	}
	if n == 0 {
		t.Fatal("no events")
	}
	// A record cut short: its lazy event fails when its fields are decoded.
	r = NewBytesReader(data, nil)
	for {
		rec, err := r.ReadRecord()
		if err != nil {
			t.Fatal(err)
		}
		c := r.Chunk()
		if cl := c.Metadata.Class(rec.TypeID); rec.TypeID < 2 || cl == nil || len(cl.Fields) < 3 {
			continue
		}
		rec.Size = 3
		if err := c.DecodeEventLazy(rec, &lazy); err != nil {
			t.Fatal(err)
		}
		if lazy.Err() != nil {
			t.Fatal("Err before the fields are decoded")
		}
		lazy.Values()
		if lazy.Err() == nil {
			t.Errorf("a %d-byte %s record decoded without an error", rec.Size, lazy.Type.Name)
		}
		break
	}
}

// TestShortRecordHeader checks that Raw's quick header read agrees with
// recordHeader wherever it answers: on random bytes at every offset
// (most of them no record at all), and on headers with padded sizes, a
// zero size, a size past the data and a type ID past the record.
func TestShortRecordHeader(t *testing.T) {
	check := func(data []byte, off int64) {
		t.Helper()
		hdr, ok := shortRecordHeader(data, off)
		if !ok {
			return
		}
		_, _, want, err := recordHeader(data, off)
		if err != nil {
			want = 0
		}
		if hdr != want {
			t.Fatalf("header at %d of % x: %d, recordHeader %d (err %v)", off, data, hdr, want, err)
		}
	}
	cases := [][]byte{
		{5, 20, 1, 2, 3},                  // size 5, type 20
		{0x85, 0x80, 0x80, 0, 20, 1, 2},   // size 5 padded to four bytes
		{0x85, 0x80, 0x80, 0x80, 0, 20},   // five size bytes: recordHeader's
		{0, 20, 1},                        // zero size
		{9, 20, 1},                        // size past the data
		{2, 0x81, 0x01},                   // type ID past the record
		{3, 0x81, 0x01},                   // two-byte type ID
		{6, 0x81, 0x80, 0x80, 0x01, 0},    // four-byte type ID
		{7, 0x81, 0x80, 0x80, 0x80, 1, 0}, // five type ID bytes
	}
	answered := 0
	for _, c := range cases {
		if _, ok := shortRecordHeader(c, 0); ok {
			answered++
		}
		check(c, 0)
	}
	if answered < len(cases)-2 {
		t.Fatalf("the quick read answered %d of %d cases", answered, len(cases))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 1<<16)
	for i := range data {
		// Many continuation bytes, some zeros and small sizes.
		switch rng.IntN(4) {
		case 0:
			data[i] = byte(rng.IntN(4))
		case 1:
			data[i] = 0x80 | byte(rng.IntN(128))
		default:
			data[i] = byte(rng.IntN(256))
		}
	}
	for off := range int64(len(data)) {
		check(data, off)
	}
}
