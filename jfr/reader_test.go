package jfr

import (
	"errors"
	"fmt"
	"io"
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
