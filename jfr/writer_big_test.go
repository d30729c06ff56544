package jfr

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"

	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/internal/spec"
	"github.com/flightrec/flightrec/internal/testrec"
)

// bigString returns the content of string-pool entry key: 4 KiB, unique
// per key.
func bigString(buf []byte, key uint64) string {
	for i := range buf {
		buf[i] = 'a' + byte((uint64(i)+key)%26)
	}
	copy(buf, fmt.Sprintf("entry %016d ", key))
	return string(buf)
}

// A checkpoint larger than 1<<28 bytes, which a 4-byte padded size cannot
// hold (JDK-8298129): its size must be an exact varint of more than 4 bytes.
func TestWriterBigCheckpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 330 MB file")
	}
	b := NewMetadataBuilder()
	_, err := b.AddEvent(EventType{Name: "go.Message", Fields: []FieldType{{Name: "text", Type: spec.String}}})
	must(t, err)
	md, err := b.Build()
	must(t, err)
	msg := md.ClassByName("go.Message")
	strClass := md.ClassByName(spec.String)

	path := t.TempDir() + "/big.jfr"
	f, err := os.Create(path)
	must(t, err)
	bw := bufio.NewWriterSize(f, 1<<20)
	w := NewWriter(bw, nil)
	must(t, w.SetMetadata(md))
	const entries = 80_000 // × 4 KiB = 328 MB
	buf := make([]byte, 4096)
	for k := uint64(1); k <= entries; k++ {
		must(t, w.AddConstant(strClass, k, StringValue(bigString(buf, k))))
	}
	var sample []uint64
	for k := uint64(1); k <= entries; k += 997 {
		sample = append(sample, k)
		must(t, w.WriteEvent(msg, []Value{IntValue(KindLong, w.Now()), PooledStringValue(k)}))
	}
	must(t, w.Close())
	must(t, bw.Flush())
	must(t, f.Close())

	f, err = os.Open(path)
	must(t, err)
	defer f.Close()
	hdr := make([]byte, HeaderSize)
	_, err = io.ReadFull(f, hdr)
	must(t, err)
	cpOff := int64(binary.BigEndian.Uint64(hdr[16:]))
	sizeBytes := make([]byte, leb128.MaxLen)
	_, err = f.ReadAt(sizeBytes, cpOff)
	must(t, err)
	size, n := leb128.Uvarint(sizeBytes)
	if size <= 1<<28 || n <= 4 || n != leb128.Len(size) {
		t.Fatalf("checkpoint size %d in %d bytes; want > 1<<28 in a minimal varint of more than 4", size, n)
	}
	t.Logf("checkpoint of %d bytes, size varint of %d bytes", size, n)

	_, err = f.Seek(0, io.SeekStart)
	must(t, err)
	r := NewReader(bufio.NewReaderSize(f, 1<<20), nil)
	c, err := r.NextChunk()
	must(t, err)
	count := 0
	c.PoolKeys(c.Metadata.ClassByName(spec.String), func(uint64, Value) { count++ })
	if count != entries {
		t.Errorf("%d string constants, want %d", count, entries)
	}
	for k := uint64(1); k <= entries; k += 7919 {
		v, ok := c.Constant(c.Metadata.ClassByName(spec.String), k)
		if want := bigString(buf, k); !ok || v.String() != want {
			t.Fatalf("constant %d: %.40q, want %.40q", k, v.String(), want)
		}
	}
	var ev Event
	i := 0
	for {
		err := r.ReadEvent(&ev)
		if errors.Is(err, io.EOF) {
			break
		}
		must(t, err)
		if got, want := ev.Fields[1].Resolve().String(), bigString(buf, sample[i]); got != want {
			t.Fatalf("event %d: %.40q, want %.40q", i, got, want)
		}
		i++
	}
	if i != len(sample) {
		t.Errorf("%d events, want %d", i, len(sample))
	}

	if _, err := exec.LookPath("jfr"); err == nil {
		t.Logf("%s", testrec.RunJFR(t, "summary", path))
	}
}
