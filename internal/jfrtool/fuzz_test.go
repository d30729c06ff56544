package jfrtool

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/jfr"
)

// FuzzTools runs what the flightrec command runs on a recording: summary
// (of a reader, and at offsets as of a file), print in both formats (of a
// file read in place, as a mapped file is, and of a stream: a pipe, a
// .gz) and metadata. None may panic or hang, every error is a
// *jfr.FormatError inside the input, and both ways of reading give the
// same output and error.
func FuzzTools(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// A stream reader trusts a chunk header's size up to 64 MiB: a
		// lower limit keeps every run fast.
		opts := &jfr.ReaderOptions{MaxChunkSize: 1 << 20}
		check := func(what string, err error) {
			t.Helper()
			if err == nil {
				return
			}
			var fe *jfr.FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("%s: error %v is not a *jfr.FormatError", what, err)
			}
			if fe.Offset < 0 || fe.Offset > int64(len(data)) {
				t.Fatalf("%s: error offset %d outside the %d-byte input: %v", what, fe.Offset, len(data), err)
			}
		}
		summary := func(s *Summary, err error) string {
			var b bytes.Buffer
			if s != nil && (s.Chunks > 0 || err == nil) {
				if werr := s.WriteText(&b); werr != nil {
					t.Fatal(werr)
				}
			}
			return fmt.Sprintf("%s\nerror: %v", b.String(), err)
		}
		s, err := Summarize(jfr.NewBytesReader(data, &jfr.ReaderOptions{SkipConstantPools: true}))
		check("summary of a reader", err)
		sa, errAt := SummarizeAt(bytes.NewReader(data), int64(len(data)), 2)
		check("summary at offsets", errAt)
		if a, b := summary(s, err), summary(sa, errAt); a != b {
			t.Fatalf("Summarize and SummarizeAt differ:\n%s\n---\n%s", a, b)
		}
		for _, format := range []Format{FormatPretty, FormatJSON} {
			var inPlace, streamed bytes.Buffer
			popts := PrintOptions{StackDepth: 5}
			errB := Print(&inPlace, jfr.NewBytesReader(data, opts), format, popts)
			check("print in place", errB)
			errS := Print(&streamed, jfr.NewReader(bytes.NewReader(data), opts), format, popts)
			check("print of a stream", errS)
			if fmt.Sprint(errB) != fmt.Sprint(errS) || !bytes.Equal(inPlace.Bytes(), streamed.Bytes()) {
				t.Fatalf("format %d: print in place (%d bytes, %v) and of a stream (%d bytes, %v) differ",
					format, inPlace.Len(), errB, streamed.Len(), errS)
			}
		}
		err = PrintMetadata(io.Discard, jfr.NewBytesReader(data, opts), MetadataOptions{})
		check("metadata", err)
	})
}

// fuzzSeeds returns the jfr package's committed FuzzReader corpus: small
// recordings by its writer and a JDK 17 chunk's start, whole, cut and
// with bits flipped.
func fuzzSeeds(t testing.TB) [][]byte {
	dir := filepath.Join("..", "..", "jfr", "testdata", "fuzz", "FuzzReader")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var seeds [][]byte
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		_, lit, ok := strings.Cut(strings.TrimSpace(string(b)), "\n")
		q, ok2 := strings.CutPrefix(lit, "[]byte(")
		q, ok3 := strings.CutSuffix(q, ")")
		v, err := strconv.Unquote(q)
		if !ok || !ok2 || !ok3 || err != nil {
			t.Fatalf("%s: not a corpus file of one []byte", e.Name())
		}
		seeds = append(seeds, []byte(v))
	}
	return seeds
}
