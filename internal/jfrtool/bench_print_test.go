package jfrtool

import (
	"bufio"
	"io"
	"os"
	"testing"

	"github.com/flightrec/flightrec/jfr"
)

// BenchmarkPrintJSON prints the file named by $FLIGHTREC_BENCH_JFR.
func BenchmarkPrintJSON(b *testing.B) { benchPrint(b, FormatJSON) }

// BenchmarkPrintJSONLines is the JSON-lines format (print --follow --json)
// of the same file.
func BenchmarkPrintJSONLines(b *testing.B) { benchPrint(b, FormatJSONLines) }

// BenchmarkPrintPretty is the human format of the same file.
func BenchmarkPrintPretty(b *testing.B) { benchPrint(b, FormatPretty) }

func benchPrint(b *testing.B, f Format) {
	name := os.Getenv("FLIGHTREC_BENCH_JFR")
	if name == "" {
		b.Skip("FLIGHTREC_BENCH_JFR not set")
	}
	for b.Loop() {
		fh, err := os.Open(name)
		if err != nil {
			b.Fatal(err)
		}
		r := jfr.NewReader(bufio.NewReaderSize(fh, 1<<20), nil)
		if os.Getenv("FLIGHTREC_BENCH_BYTES") != "" {
			data, _ := os.ReadFile(name)
			r = jfr.NewBytesReader(data, nil)
		}
		if err := Print(io.Discard, r, f, PrintOptions{StackDepth: 5}); err != nil {
			b.Fatal(err)
		}
		fh.Close()
	}
}
