package jfrtool

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/flightrec/flightrec/internal/testrec"
	"github.com/flightrec/flightrec/jfr"
)

// TestSummaryMatchesJFR compares our summary text with jfr summary's, byte
// for byte: on JDK recordings, and on a chunk followed by and extended
// over reservation pages, as a killed recorder leaves its file. There jfr
// lists the records of types the chunk's metadata does not declare (the
// fillers, type 2, and the headers of pages read as records, type 76) as
// "N (missing event metadata)".
func TestSummaryMatchesJFR(t *testing.T) {
	testrec.JFR(t)
	// A JVM declares event types from id 2 on, so a filler record in its
	// chunks counts as that type; ours declare neither 2 nor 76.
	ours := oneChunk(t)
	clock := jfr.Clock{StartNanos: 1.8e18, TicksPerSecond: 1e9}
	after := jfr.AppendReservation(bytes.Clone(ours), clock, 3)
	inside := jfr.AppendReservation(padToPage(bytes.Clone(ours)), clock, 3)
	binary.BigEndian.PutUint64(inside[8:], uint64(len(inside)))

	var err error
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		data    []byte
		missing bool
	}{
		{"jdk17-sample-multichunk", testrec.Bytes(t, "jdk17-sample-multichunk.jfr.gz"), false},
		{"jdk25-alltypes", testrec.Bytes(t, "jdk25-alltypes.jfr.gz"), false},
		{"ours", ours, false},
		{"reservation-after", after, true},
		{"reservation-inside", inside, true},
	} {
		path := filepath.Join(dir, tc.name+".jfr")
		if err := os.WriteFile(path, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		want := testrec.RunJFR(t, "summary", path)
		for _, how := range []string{"Summarize", "SummarizeAt"} {
			var s *Summary
			if how == "Summarize" {
				s, err = Summarize(jfr.NewReader(bytes.NewReader(tc.data), &jfr.ReaderOptions{SkipConstantPools: true}))
			} else {
				s, err = SummarizeAt(bytes.NewReader(tc.data), int64(len(tc.data)), 2)
			}
			if err != nil {
				t.Fatalf("%s: %s: %v", tc.name, how, err)
			}
			var got bytes.Buffer
			if err := s.WriteText(&got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("%s: %s differs from jfr summary:\n--- ours\n%s--- jfr\n%s", tc.name, how, got.Bytes(), want)
			}
		}
		if tc.missing != bytes.Contains(want, []byte("(missing event metadata)")) {
			t.Errorf("%s: jfr summary lists missing metadata: %v, want %v\n%s", tc.name, !tc.missing, tc.missing, want)
		}
	}
}

// padToPage ends a chunk with a filler record so that its size is a
// multiple of jfr.ReservePage, as the recorder's chunks are before they grow.
func padToPage(chunk []byte) []byte {
	pad := jfr.ReservePage - len(chunk)%jfr.ReservePage
	if pad < jfr.FillerHeaderSize {
		pad += jfr.ReservePage
	}
	var fh [jfr.FillerHeaderSize]byte
	jfr.PutFillerHeader(fh[:], int64(pad))
	chunk = append(chunk, fh[:]...)
	chunk = append(chunk, make([]byte, pad-jfr.FillerHeaderSize)...)
	binary.BigEndian.PutUint64(chunk[8:], uint64(len(chunk)))
	return chunk
}

// oneChunk writes a chunk of ten events of a type of our own, and none of
// the JDK's.
func oneChunk(t *testing.T) []byte {
	b := jfr.NewMetadataBuilder()
	if _, err := b.AddEvent(jfr.EventType{Name: "app.Tick", Fields: []jfr.FieldType{{Name: "n", Type: "long"}}}); err != nil {
		t.Fatal(err)
	}
	md, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := jfr.NewWriter(&out, &jfr.WriterOptions{StartNanos: 1.8e18, TicksPerSecond: 1e9, Now: func() int64 { return 1e9 }})
	if err := w.SetMetadata(md); err != nil {
		t.Fatal(err)
	}
	tick := md.ClassByName("app.Tick")
	for i := range int64(10) {
		if err := w.WriteEvent(tick, []jfr.Value{jfr.IntValue(jfr.KindLong, i*1e6), jfr.IntValue(jfr.KindLong, i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
