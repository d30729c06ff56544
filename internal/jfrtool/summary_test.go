package jfrtool

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/flightrec/flightrec/internal/testrec"
	"github.com/flightrec/flightrec/jfr"
)

// summarizeBoth summarizes data with the streaming reader and with the
// parallel window scanner.
func summarizeBoth(data []byte) (stream, at *Summary, serr, aerr error) {
	stream, serr = Summarize(jfr.NewReader(bytes.NewReader(data), &jfr.ReaderOptions{SkipConstantPools: true}))
	at, aerr = SummarizeAt(bytes.NewReader(data), int64(len(data)), 2)
	return
}

// SummarizeAt reads far less than Summarize (record headers only, chunks in
// parallel) but must report the same: the same rows and chunks for a good
// file, and for a truncated or corrupt one the same summary of the complete
// chunks before the same error.
func TestSummarizeAtMatchesSummarize(t *testing.T) {
	for _, name := range []string{"jdk17-sample-multichunk.jfr.gz", "jdk25-alltypes.jfr.gz"} {
		data := testrec.Bytes(t, name)
		check := func(what string, data []byte) {
			t.Helper()
			s1, s2, e1, e2 := summarizeBoth(data)
			if fmt.Sprint(e1) != fmt.Sprint(e2) {
				t.Fatalf("%s %s: errors differ:\n stream: %v\n at:     %v", name, what, e1, e2)
			}
			if !reflect.DeepEqual(s1, s2) {
				t.Fatalf("%s %s: summaries differ: %d chunks vs %d", name, what, s1.Chunks, s2.Chunks)
			}
		}
		check("whole", data)
		s, _, err, _ := summarizeBoth(data)
		if err != nil || s.Chunks < 3 {
			t.Fatalf("%s: %d chunks, %v", name, s.Chunks, err)
		}
		for _, cut := range []int{0, 40, 68, 1000, len(data) / 3, len(data) / 2, len(data) - 1} {
			check(fmt.Sprintf("cut at %d", cut), data[:cut])
		}
		for off := 5; off < len(data); off += len(data) / 97 {
			b := bytes.Clone(data)
			b[off] ^= 0x81
			check(fmt.Sprintf("flip at %d", off), b)
		}
	}
}

func TestSummarizeAtErrors(t *testing.T) {
	data := testrec.Bytes(t, "jdk25-alltypes.jfr.gz")
	_, err := SummarizeAt(bytes.NewReader(data[:len(data)-5]), int64(len(data)-5), 2)
	var fe *jfr.FormatError
	if !errors.As(err, &fe) || !errors.Is(err, jfr.ErrTruncated) || fe.Chunk != 2 {
		t.Fatalf("truncated file: %v", err)
	}
}
