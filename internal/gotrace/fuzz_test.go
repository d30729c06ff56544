package gotrace

import (
	"bytes"
	"io"
	"testing"
)

// FuzzConvert converts any bytes as `flightrec import` does: no input may
// panic or hang the converter, and what is not a trace is an error.
func FuzzConvert(f *testing.F) {
	data := workloadTrace(f)
	for _, n := range []int{16, 4 << 10, 32 << 10, 128 << 10} {
		f.Add(data[:min(n, len(data))])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Convert(bytes.NewReader(data), io.Discard, Options{})
		if err == nil && len(data) < 16 {
			t.Fatalf("%d bytes converted without error", len(data))
		}
	})
}
