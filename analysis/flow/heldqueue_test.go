package flow

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/internal/flowspec"
	"github.com/flightrec/flightrec/jfr"
)

// TestHeldQueue checks the queue against a slice through entries shorter
// and longer than a block, a queue that empties and fills again, and
// blocks that go to the file and come back, with and without blocks kept
// in memory.
func TestHeldQueue(t *testing.T) {
	for _, keep := range []int{0, 1, 1 << 20} {
		t.Run(fmt.Sprint("keep", keep), func(t *testing.T) {
			q := newHeldQueue(t.TempDir())
			defer q.close()
			q.blockSize, q.keep = 64, keep
			rng := rand.New(rand.NewPCG(1, uint64(keep)))
			var want [][]byte
			var got []byte
			for i := range 20000 {
				// Runs of pushes, then of pops, emptying the queue now and
				// then.
				if i/500%2 == 0 || len(want) == 0 {
					e := make([]byte, rng.IntN(200))
					for j := range e {
						e[j] = byte(rng.Uint32())
					}
					h := []byte{byte(i)}
					q.push(h, e)
					want = append(want, append(h, e...))
					continue
				}
				var err error
				got, err = q.pop(got)
				if err != nil {
					t.Fatalf("pop %d: %v", i, err)
				}
				if !bytes.Equal(got, want[0]) {
					t.Fatalf("pop %d: %x, want %x", i, got, want[0])
				}
				want = want[1:]
			}
			if keep < 1<<20 && q.nslots == 0 {
				t.Error("no block went to the file")
			}
			if keep == 1<<20 && q.file != nil {
				t.Error("a block went to the file")
			}
			if q.n != len(want) {
				t.Errorf("%d entries queued, want %d", q.n, len(want))
			}
			// The file holds at most the blocks queued at once.
			if max := int64(20000 * 205 / 64); q.nslots > max {
				t.Errorf("%d slots in the file", q.nslots)
			}
		})
	}
}

// TestHeldQueueDamaged: a block changed in the file is an error naming its
// byte offset when it is read back, not wrong spans.
func TestHeldQueueDamaged(t *testing.T) {
	q := newHeldQueue(t.TempDir())
	defer q.close()
	q.blockSize, q.keep = 64, 0
	for i := range 10 {
		q.push(nil, bytes.Repeat([]byte{byte(i)}, 40))
	}
	if q.nslots == 0 {
		t.Fatal("no block went to the file")
	}
	if _, err := q.file.WriteAt([]byte{0xff}, 64+3); err != nil {
		t.Fatal(err)
	}
	var err error
	for err == nil && q.n > 0 {
		_, err = q.pop(nil)
	}
	if err == nil || !strings.Contains(err.Error(), "block at byte offset 64: checksum mismatch") {
		t.Errorf("error %v", err)
	}
}

// readJFRSpans reads a recording's spans with a source whose held queue
// has blocks of blockSize bytes (0: the default), none kept in memory.
func readJFRSpans(t *testing.T, data []byte, blockSize int) (*jfrSource, []rawSpan, error) {
	t.Helper()
	s := newJFRSource("n.jfr", bytes.NewReader(data), io.NopCloser(nil), t.TempDir())
	defer s.Close()
	if blockSize > 0 {
		s.held.blockSize, s.held.keep = blockSize, 0
	}
	spans, err := readSpans(t, s)
	return s, spans, err
}

// TestLateEvents: an event flushed after its span's record, in the
// record's chunk or the next, joins the span; one two chunks later starts
// a span of its own, never closed; a second record for a span still held
// is skipped as malformed. The same with the held spans in the file.
func TestLateEvents(t *testing.T) {
	var out bytes.Buffer
	fw := newFlowWriter(t, &out, 0, 1e18)
	ev := func(kind flowspec.Kind, span, ticks int64, text string) {
		f := map[string]jfr.Value{flowspec.FieldSpan: jfr.IntValue(jfr.KindLong, span),
			flowspec.FieldThread: jfr.StringValue("main")}
		if text != "" {
			f[flowspec.FieldText] = jfr.StringValue(text)
		}
		fw.write(typeOfKind[kind], ticks, f)
	}
	record := func(span, ticks int64) {
		fw.write(flowspec.SpanEvent, ticks, map[string]jfr.Value{flowspec.FieldSpan: jfr.IntValue(jfr.KindLong, span)})
	}
	chunk := func(ticks int64) {
		if err := fw.w.StartChunk(ticks); err != nil {
			t.Fatal(err)
		}
	}
	// Chunk 0.
	ev(flowspec.Checkpoint, 1, 100, "a1")
	ev(flowspec.Checkpoint, 2, 200, "b1")
	record(1, 300)
	ev(flowspec.Checkpoint, 4, 350, "d1") // span 4 is open across chunks
	record(2, 400)
	ev(flowspec.Checkpoint, 1, 250, "a2 late, same chunk")
	chunk(1000)
	// Chunk 1.
	ev(flowspec.Checkpoint, 2, 390, "b2 late, next chunk")
	record(1, 1100) // a second record: skipped
	ev(flowspec.Checkpoint, 3, 1200, "c1")
	record(3, 1300)
	chunk(2000)
	// Chunk 2: span 1 and 2 left, span 3 waits for chunk 3.
	ev(flowspec.Checkpoint, 1, 260, "a3 too late")
	ev(flowspec.Checkpoint, 3, 1250, "c2 late")
	ev(flowspec.Checkpoint, 4, 2100, "d2")
	record(4, 2200)
	fw.close()
	rec := out.Bytes()

	type span struct {
		texts      string
		unfinished bool
	}
	summary := func(spans []rawSpan) []span {
		var sum []span
		for _, sp := range spans {
			var texts []string
			for _, e := range sp.events {
				texts = append(texts, string(e.text))
			}
			sum = append(sum, span{strings.Join(texts, ","), sp.unfinished})
		}
		return sum
	}
	want := []span{
		{"a1,a2 late, same chunk", false},
		{"b1,b2 late, next chunk", false},
		{"c1,c2 late", false},
		{"d1,d2", false},
		{"a3 too late", true},
	}
	for _, blockSize := range []int{0, 16} {
		s, spans, err := readJFRSpans(t, rec, blockSize)
		if !errors.Is(err, io.EOF) {
			t.Fatalf("blocks of %d: %v", blockSize, err)
		}
		if got := summary(spans); !reflect.DeepEqual(got, want) {
			t.Errorf("blocks of %d: spans\n%+v\nwant\n%+v", blockSize, got, want)
		}
		if s.warnings() != 1 {
			t.Errorf("blocks of %d: %d warnings, want 1 (the second record)", blockSize, s.warnings())
		}
		if blockSize > 0 && s.held.nslots == 0 {
			t.Errorf("blocks of %d: no block went to the file", blockSize)
		}
	}
}

// TestHeldSpansInFile: a recording read with its held spans in the file,
// whole, cut short and with a damaged chunk, gives the spans, damage and
// end it gives with them in memory; a block changed in the file ends the
// input with an error naming the file and the byte offset.
func TestHeldSpansInFile(t *testing.T) {
	_, rec := genJFRInputs(t, 3000)
	damaged := bytes.Clone(rec)
	damaged[len(damaged)/2] ^= 0xff
	for name, data := range map[string][]byte{"whole": rec, "cut": rec[:len(rec)*9/10], "damaged": damaged} {
		ms, want, wantErr := readJFRSpans(t, data, 0)
		fs, got, gotErr := readJFRSpans(t, data, 256)
		if fs.held.nslots == 0 || ms.held.file != nil {
			t.Errorf("%s: %d blocks in the file with small blocks, file %v with the default", name, fs.held.nslots, ms.held.file)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: spans differ", name)
		}
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(fs.damaged(), ms.damaged()) {
			t.Errorf("%s: end %v, damage %v; in memory %v, %v", name, gotErr, fs.damaged(), wantErr, ms.damaged())
		}
	}

	s := newJFRSource("n1.jfr", bytes.NewReader(rec), io.NopCloser(nil), t.TempDir())
	defer s.Close()
	s.held.blockSize, s.held.keep = 256, 0
	var sp rawSpan
	var err error
	n := 0
	for ; err == nil; n++ {
		if err = s.next(&sp); s.held.nslots > 4 && n%100 == 0 {
			// Damage every slot: the next block read back fails.
			for i := range s.held.nslots {
				s.held.file.WriteAt([]byte{0xff, 0xff}, i*256+7)
			}
		}
	}
	if err == nil || !strings.Contains(err.Error(), "n1.jfr: temporary file of the held spans, block at byte offset") ||
		!strings.Contains(err.Error(), "checksum mismatch") {
		t.Errorf("after %d spans: %v", n, err)
	}
}

// TestHeldSpansMemory reads one node's generated recording of four
// 12 MiB chunks: the spans the reader holds (two chunks' worth, some
// 350 thousand) wait in a file, so its live heap stays at about the
// chunk being decoded. In memory they took 50 MB and more.
func TestHeldSpansMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 48 MB recording")
	}
	path := filepath.Join(t.TempDir(), "n0.jfr")
	if err := writeGenRecording(path, 0, 5, 4*spansPerChunk*5/3); err != nil {
		t.Fatal(err)
	}
	src, err := openSource(FileInput(path), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	peak, n := uint64(0), 0
	var sp rawSpan
	for ; ; n++ {
		err := src.next(&sp)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if n%(spansPerChunk/4) == 0 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc-min(base, ms.HeapAlloc))
		}
	}
	if n < 3*spansPerChunk {
		t.Fatalf("%d spans, want four chunks' worth", n)
	}
	t.Logf("%d spans; peak live heap %.1f MiB over the start", n, float64(peak)/(1<<20))
	if peak > 32<<20 {
		t.Errorf("live heap %.1f MiB while reading; want at most 32 MiB", float64(peak)/(1<<20))
	}
}

// TestHeldSpansNoFile reads a recording whose held spans' temporary file
// cannot be created (its directory is under a file: root ignores
// permissions). With a memory budget the input ends with an error naming
// the directory and the OS error, which fatal reports; without one the
// spans stay in memory, the same spans as read with a file, and
// memoryWarning says why. Before, both read on silently in memory.
func TestHeldSpansNoFile(t *testing.T) {
	_, rec := genJFRInputs(t, 3000)
	_, want, wantErr := readJFRSpans(t, rec, 256)
	dir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(dir, "tmp")
	for _, bounded := range []bool{false, true} {
		s := newJFRSource("n1.jfr", bytes.NewReader(rec), io.NopCloser(nil), dir)
		s.held.blockSize, s.held.keep = 256, 0
		s.bounded = bounded
		got, err := readSpans(t, s)
		s.Close()
		wantMsg := "n1.jfr: temporary file of the held spans: open " + dir + "/flightrec-flow-"
		if !bounded {
			if !reflect.DeepEqual(got, want) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Errorf("without a budget: %d spans, end %v; want %d, %v", len(got), err, len(want), wantErr)
			}
			if w := s.memoryWarning(); w == nil || !strings.HasPrefix(w.Error(), wantMsg) ||
				!strings.HasSuffix(w.Error(), ": not a directory: the held spans stay in memory") {
				t.Errorf("without a budget: warning %v", w)
			}
			if s.fatal() != nil {
				t.Errorf("without a budget: fatal %v", s.fatal())
			}
			continue
		}
		wantMsg = "n1.jfr: the memory budget cannot be kept: temporary file of the held spans: open " + dir + "/flightrec-flow-"
		if err == nil || !strings.HasPrefix(err.Error(), wantMsg) || !strings.HasSuffix(err.Error(), ": not a directory") {
			t.Errorf("with a budget: end %v, want %s...: not a directory", err, wantMsg)
		}
		if len(got) >= len(want) {
			t.Errorf("with a budget: %d spans read, want fewer than %d", len(got), len(want))
		}
		if f := s.fatal(); f == nil || f.Error() != fmt.Sprint(err) {
			t.Errorf("with a budget: fatal %v, want %v", f, err)
		}
		if s.memoryWarning() != nil {
			t.Errorf("with a budget: warning %v", s.memoryWarning())
		}
	}
}
