package gotrace

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestBadInput checks that what is not a whole trace gives an error that
// says so, and never a panic.
func TestBadInput(t *testing.T) {
	data := workloadTrace(t)
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "not a Go execution trace"},
		{"text", []byte("hello, this is not a trace\n"), "not a Go execution trace"},
		{"jfr", []byte("FLR\x00\x00\x02\x00\x01"), "not a Go execution trace"},
		// "no events" (Go 1.26 traces), "truncated trace" (1.25's).
		{"header only", data[:16], ""},
		{"truncated", data[:len(data)*2/3], "byte offset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Convert(bytes.NewReader(tc.in), io.Discard, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) ||
				tc.want == "" && !strings.Contains(err.Error(), "no events") && !strings.Contains(err.Error(), "truncated trace") {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			t.Log(err)
		})
	}
	// A flipped byte gives an error of one line: the trace reader's dump
	// of its state is left out.
	lines := 0
	for off := 16; off < len(data); off += 1 + len(data)/61 {
		b := bytes.Clone(data)
		b[off] ^= 0x40
		if err := Convert(bytes.NewReader(b), io.Discard, Options{}); err != nil {
			lines++
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("flip at %d: error of several lines:\n%v", off, err)
			}
		}
	}
	t.Logf("%d of 61 flips made an error", lines)
	// Every cut of the trace either converts its complete generations or
	// fails with an error; none panics.
	for cut := 0; cut < len(data); cut += 1 + len(data)/97 {
		err := Convert(bytes.NewReader(data[:cut]), io.Discard, Options{})
		if err == nil && cut < len(data)-1 {
			t.Logf("cut at %d of %d converted without error", cut, len(data))
		}
	}
}

// TestReaderPanicIsError: where a damaged trace makes the trace reader's
// accessors panic (CI met "expected id 91 in trace.stack table" for one
// flipped byte, in Stack.Frames called while a generation was written),
// Convert returns an error naming the generation and the offset instead.
// The panic is raised here in the same place, the generation's emit;
// the error keeps its first line, as the reader's errors do.
func TestReaderPanicIsError(t *testing.T) {
	data := workloadTrace(t)
	c := NewConverter(Options{})
	err := c.Convert(bytes.NewReader(data), func(*Generation) error {
		panic("expected id 91 in trace.stack table\nand a second line")
	})
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "trace generation 1, byte offset ") || !strings.Contains(err.Error(), "expected id 91") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %q, want ErrDamaged at generation 1 with the panic's first line", err)
	}
}
