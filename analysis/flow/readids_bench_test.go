package flow

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReadRecordingIDs reads one node of the generated cluster
// (-flow.requests requests, its recording in memory) as pass 1 reads an
// input, less the span log and the time-aligned merge: the recording
// decoded into spans, whose message IDs (the span's and its events') are
// interned in an ID table, and then looked up again (as pass 2 did before
// the span logs carried the keys; it is the table's read path). It
// runs on one goroutine, so its CPU time is the work of the path that
// carries an ID from the record to its key (ids.go's wire form).
//
//	go test ./analysis/flow -run '^$' -bench ReadRecordingIDs -flow.requests 100000
func BenchmarkReadRecordingIDs(b *testing.B) {
	data, dir := genNodeRecording(b)
	var events int64
	b.ResetTimer()
	for range b.N {
		tab := newIDTable()
		intern := func(id []byte) uint32 { k, _ := tab.Intern(id); return k }
		lookup := func(id []byte) uint32 {
			k, ok := tab.Lookup(id)
			if !ok {
				b.Fatal("an ID of pass 1 not found")
			}
			return k
		}
		for _, find := range []func([]byte) uint32{intern, lookup} {
			s := newJFRSource("n1.jfr", bytes.NewReader(data), io.NopCloser(nil), dir)
			ids := &spanIDs{find: find}
			var sp rawSpan
			var keys []uint32
			for {
				err := s.next(&sp)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				events += int64(len(sp.events))
				ids.reset()
				keys = spanKeys(&sp, keys[:0], ids.key)
				for j := range sp.events {
					if e := &sp.events[j]; e.msg != nil {
						ids.key(e.msg)
					}
				}
			}
			s.Close()
		}
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkReadAheadPass1 reads one node of the generated cluster
// (-flow.requests requests, its recording in memory) as pass 1's
// read-ahead goroutine does: the recording decoded into spans, each held
// until the chunk after its record's is read, and handed over in
// batches, which the benchmark drains as the merge would. The span log,
// which the read-ahead writes with the keys the merge notes, is left out
// (BenchmarkSpanLogRoundTrip measures it).
// With GOMAXPROCS=1 its time is the CPU work of that path.
//
//	GOMAXPROCS=1 go test ./analysis/flow -run '^$' -bench ReadAheadPass1 -flow.requests 100000
func BenchmarkReadAheadPass1(b *testing.B) {
	data, dir := genNodeRecording(b)
	var events int64
	b.ResetTimer()
	for range b.N {
		log, err := newSpanLog(dir)
		if err != nil {
			b.Fatal(err)
		}
		src := newJFRSource("n1.jfr", bytes.NewReader(data), io.NopCloser(nil), dir)
		r := newReadAhead(&loggingSource{source: src, log: log})
		var sp rawSpan
		for {
			err := r.next(&sp)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			events += int64(len(sp.events))
		}
		if err := log.finish(); err != nil {
			b.Fatal(err)
		}
		r.Close()
		log.remove()
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// genNodeRecording returns node 1's recording of the generated cluster
// (-flow.requests requests), read into memory, and a temporary directory
// for the reader's files; the benchmark's bytes are the recording's.
func genNodeRecording(b *testing.B) (data []byte, dir string) {
	path := filepath.Join(b.TempDir(), "n1.jfr")
	if err := writeGenRecording(path, 1, 5, *benchRequests); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	return data, b.TempDir()
}
