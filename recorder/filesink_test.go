package recorder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/jfr"
)

// fileOp is one write or truncate a sink made.
type fileOp struct {
	truncate bool
	off      int64 // where a write starts, or the size truncated to
	data     []byte
}

// opLog is a sinkFile that only records what is done to it.
type opLog struct {
	mu  sync.Mutex
	ops []fileOp
}

func (l *opLog) WriteAt(b []byte, off int64) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops = append(l.ops, fileOp{off: off, data: append([]byte(nil), b...)})
	return len(b), nil
}

func (l *opLog) Truncate(size int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops = append(l.ops, fileOp{truncate: true, off: size})
	return nil
}

func (l *opLog) Close() error { return nil }

func (l *opLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ops)
}

// apply returns file after op, or after its first n bytes when a kill cuts
// it short (n < len(op.data)).
func (op fileOp) apply(file []byte, n int) []byte {
	if op.truncate {
		if op.off <= int64(len(file)) {
			return file[:op.off]
		}
		return append(file, make([]byte, op.off-int64(len(file)))...)
	}
	if end := op.off + int64(n); end > int64(len(file)) {
		file = append(file, make([]byte, end-int64(len(file)))...)
	}
	copy(file[op.off:], op.data[:n])
	return file
}

// tears returns where Linux may cut op short on SIGKILL: at the page
// boundaries inside it (generic_perform_write checks for a fatal signal
// before each page it copies), however small the write.
func (op fileOp) tears() []int {
	var at []int
	if op.truncate {
		return nil
	}
	for b := (op.off/jfr.ReservePage + 1) * jfr.ReservePage; b < op.off+int64(len(op.data)); b += jfr.ReservePage {
		at = append(at, int(b-op.off))
	}
	return at
}

// countCounted reads data with our reader and counts its test.Counted
// events.
func countCounted(data []byte) (int, error) {
	r := jfr.NewBytesReader(data, nil)
	var ev jfr.Event
	n := 0
	for {
		err := r.ReadEvent(&ev)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if ev.Type.Name == "test.Counted" {
			n++
		}
	}
}

// killMark says that once the first ops operations are done, the file
// holds events test.Counted events (a flushpoint returned).
type killMark struct{ ops, events int }

// TestKilledAtEveryWrite records to a file that logs its writes and
// truncates, through flushpoints, chunk cuts, reservation growth and Stop,
// then rebuilds the file as a kill would leave it after every prefix of
// those operations, and after every page-boundary tear of each write: each
// state reads with our reader, holding at least the events of the last
// flushpoint written whole; jfr summary reads a sample of them.
func TestKilledAtEveryWrite(t *testing.T) {
	log := &opLog{}
	createFile = func(string) (sinkFile, error) { return log, nil }
	defer func() { createFile = func(path string) (sinkFile, error) { return os.Create(path) } }()
	defer func(g int64) { growth = g }(growth)
	growth = 64 << 10 // grow often

	only := Settings{"*": {Enabled: Bool(false)}, "test.Counted": {Enabled: Bool(true)}, "jdk.DataLoss": {Enabled: Bool(true)}}
	rec, err := Start(WithFile(filepath.Join(t.TempDir(), "logged.jfr")), WithSettings(only), WithMaxChunkSize(150<<10))
	if err != nil {
		t.Fatal(err)
	}
	var marks []killMark
	dropped0 := theSession.s.DroppedEvents.Load()
	emitted := 0
	for round := range 60 {
		n := 200 + round*37%400 // vary the sizes, so that writes end anywhere in a page
		emitCounted(n, emitted)
		emitted += n
		theSession.flushNow()
		marks = append(marks, killMark{log.len(), emitted - int(theSession.s.DroppedEvents.Load()-dropped0)})
	}
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	checkKilledStates(t, log.ops, marks)
}

// TestKilledAtEveryWriteSwitchTorn writes segments to a sink directly,
// sized so that the data ends in each of the last 5 bytes of a page,
// where a 6-byte write that switches a filler header would straddle two
// pages: in the first write, in flushpoints, at chunk cuts, before a
// reservation grows and before Close. Every state a kill may leave reads.
func TestKilledAtEveryWriteSwitchTorn(t *testing.T) {
	defer func(g int64) { growth = g }(growth)
	growth = 8 << 10 // grow often

	b := jfr.NewMetadataBuilder()
	typeID, err := b.AddEvent(jfr.EventType{Name: "test.Counted", Fields: []jfr.FieldType{{Name: "s", Type: "java.lang.String"}}})
	if err != nil {
		t.Fatal(err)
	}
	md, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	const tick0 = 1 << 40
	newWriter := func(out *chunkParts) *jfr.Writer {
		w := jfr.NewWriter(out, &jfr.WriterOptions{StartNanos: 1e18, StartTicks: tick0, Now: func() int64 { return tick0 }})
		if err := w.SetMetadata(md); err != nil {
			t.Fatal(err)
		}
		return w
	}
	out := &chunkParts{}
	w := newWriter(out)
	// record appends an event record of exactly n bytes (7 to 127).
	record := func(dst []byte, n int) []byte {
		payload := append(leb128.AppendUvarint(nil, tick0), 3, byte(n)) // start, then a UTF-8 string
		over := len(jfr.AppendRecord(nil, typeID, payload))
		payload[len(payload)-1] = byte(n - over)
		payload = append(payload, strings.Repeat("x", n-over)...)
		rec := jfr.AppendRecord(nil, typeID, payload)
		if len(rec) != n {
			t.Fatalf("a record of %d bytes, want %d", len(rec), n)
		}
		return append(dst, rec...)
	}
	// records returns n bytes of records and how many.
	records := func(n int) ([]byte, int) {
		var b []byte
		k := 0
		for n > 0 {
			m := min(n, 100)
			if n-m < 10 && n > 100 {
				m = n - 10
			}
			b, n, k = record(b, m), n-m, k+1
		}
		return b, k
	}

	log := &opLog{}
	s := &fileSink{f: log}
	var marks []killMark
	events, chunkStart, hits, cuts, first := 0, int64(tick0), 0, 0, true
	// flush writes a segment of records bytes, cutting the chunk after
	// it if cut is set.
	flush := func(recs int, cut bool) int64 {
		b, k := records(recs)
		if err := w.WriteRecords(b); err != nil {
			t.Fatal(err)
		}
		out.parts = out.parts[:0]
		if err := w.Flushpoint(chunkStart + 1000); err != nil {
			t.Fatal(err)
		}
		if cut {
			if err := w.EndChunk(chunkStart + 1000); err != nil {
				t.Fatal(err)
			}
			chunkStart += 1000
		}
		seg := segment{first: first, parts: out.parts, header: w.Header(), closed: cut}
		first = cut
		at := s.end
		if seg.first && s.opened {
			at += padFor(at)
		}
		if e := at + seg.size(); e%jfr.ReservePage > jfr.ReservePage-jfr.FillerHeaderSize {
			hits++
		}
		if err := s.write(seg); err != nil {
			t.Fatal(err)
		}
		events += k
		marks = append(marks, killMark{len(log.ops), events})
		return seg.size() - int64(len(b))
	}
	// What a chunk's first segment adds besides its records, measured on
	// another writer (which writes the same bytes), then what the others
	// add.
	probeOut := &chunkParts{}
	probe := newWriter(probeOut)
	if err := probe.WriteRecords(record(nil, 100)); err != nil {
		t.Fatal(err)
	}
	if err := probe.Flushpoint(chunkStart + 1000); err != nil {
		t.Fatal(err)
	}
	firstOver := segment{parts: probeOut.parts}.size() - 100
	var over int64
	// toEnd returns the records that make a segment end r bytes before
	// a page boundary, at least 100 bytes of them.
	toEnd := func(r int64, first bool) int {
		at, o := s.end, over
		if first {
			at, o = at+padFor(at), firstOver
		}
		n := jfr.ReservePage - r - (at+o)%jfr.ReservePage
		for n < 100 {
			n += jfr.ReservePage
		}
		return int(n)
	}
	if got := flush(toEnd(2, true), false); got != firstOver {
		t.Fatalf("a first segment adds %d bytes, the probe's %d", got, firstOver)
	}
	over = flush(100, false)
	for round := range 20 {
		r := int64(1 + round%5)
		switch round % 4 {
		case 0, 2: // a flushpoint, growing the reservation now and then
			flush(toEnd(r, false), false)
		case 1: // a chunk's last flushpoint, and its next chunk's first
			flush(toEnd(r, false), true)
			flush(toEnd(r, true), false)
			cuts++
		case 3: // a flushpoint after a small one, then one of several pages
			flush(toEnd(r, false), false)
			flush(toEnd(r, false)+2*jfr.ReservePage, false)
		}
	}
	flush(toEnd(3, false), false) // the data Close drops the reservation after
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	marks = append(marks, killMark{len(log.ops), events})
	if hits < 25 || cuts < 5 {
		t.Fatalf("%d segments end in the last 5 bytes of a page, %d chunk cuts: the test no longer covers them", hits, cuts)
	}
	t.Logf("%d segments end in the last 5 bytes of a page", hits)
	checkKilledStates(t, log.ops, marks)

	// jfr.Follow reads the file while it is written, flush by flush, the
	// padding between segments and the shifted offsets included.
	path := filepath.Join(t.TempDir(), "followed.jfr")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	done := make(chan error, 1)
	followed := 0
	go func() {
		done <- jfr.Follow(t.Context(), path, &jfr.FollowOptions{Poll: time.Millisecond, FinalGrace: 200 * time.Millisecond}, func(r *jfr.Reader) error {
			var ev jfr.Event
			for {
				err := r.ReadEvent(&ev)
				if errors.Is(err, io.EOF) {
					return nil
				}
				if err != nil {
					return err
				}
				if ev.Type.Name == "test.Counted" {
					followed++
				}
			}
		})
	}()
	for _, op := range log.ops {
		if op.truncate {
			err = f.Truncate(op.off)
		} else {
			_, err = f.WriteAt(op.data, op.off)
		}
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := <-done; err != nil || followed != events {
		t.Fatalf("jfr.Follow read %d events (%v), want %d", followed, err, events)
	}
}

// checkKilledStates rebuilds the file ops make as a kill would leave it
// after every prefix of them, and after every page-boundary tear of each
// write: each state reads with our reader, holding at least the events of
// the last flushpoint written whole (marks); jfr summary reads a sample of
// them.
func checkKilledStates(t *testing.T, ops []fileOp, marks []killMark) {
	t.Helper()
	final := marks[len(marks)-1].events
	// A state is the file after the first i operations and n bytes of
	// operation i (n = -1: none of it).
	type state struct {
		op, n int
		kind  string
	}
	var file []byte
	var sample []state
	grows, pageTears, smallTears, states := 0, 0, 0, 0
	check := func(st state, data []byte) {
		t.Helper()
		want := 0
		for _, m := range marks {
			if m.ops <= st.op || m.ops == st.op+1 && st.n == len(ops[st.op].data) {
				want = m.events
			}
		}
		if dir := os.Getenv("FLIGHTREC_KILLED_STATES"); dir != "" {
			// For checking the states with other readers by hand.
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("state-%04d-%d-%s.jfr", st.op, st.n, strings.ReplaceAll(st.kind, " ", "-"))), data, 0o644)
		}
		got, err := countCounted(data)
		if err != nil {
			t.Fatalf("killed in operation %d of %d (%s, %d bytes of it done): %v", st.op, len(ops), st.kind, st.n, err)
		}
		if got < want || got > final {
			t.Fatalf("killed in operation %d of %d (%s, %d bytes of it done): %d events, want %d to %d", st.op, len(ops), st.kind, st.n, got, want, final)
		}
		states++
	}
	for i, op := range ops {
		kind := "write in place"
		switch {
		case op.truncate:
			kind = "truncate"
			if op.off > int64(len(file)) {
				t.Fatalf("operation %d extends the file from %d to %d bytes by truncating", i, len(file), op.off)
			}
		case op.off+int64(len(op.data)) > int64(len(file)) && i > 0:
			// Past its first chunk the file grows only by whole
			// reservation pages.
			if !jfr.IsReservation(op.data) || op.off%jfr.ReservePage != 0 || len(op.data)%jfr.ReservePage != 0 {
				t.Fatalf("operation %d writes %d bytes at %d, past the end of the file (%d bytes), not as reservation pages", i, len(op.data), op.off, len(file))
			}
			kind = "reservation pages"
			grows++
		}
		if i > 0 { // before the first write ends there is no flushpoint to keep
			for _, n := range op.tears() {
				st := state{i, n, kind + " torn"}
				data := op.apply(append([]byte(nil), file...), n)
				check(st, data)
				switch {
				case kind == "reservation pages":
					pageTears++
					if pageTears == 2 {
						sample = append(sample, st)
					}
				case len(op.data) <= jfr.FillerHeaderSize:
					smallTears++
					if smallTears <= 2 {
						sample = append(sample, st)
					}
				}
			}
		}
		file = op.apply(file, len(op.data))
		st := state{i, len(op.data), kind}
		check(st, file)
		if grows == 1 && kind != "write in place" || i >= len(ops)-4 || i%(len(ops)/5) == 0 {
			sample = append(sample, st)
		}
	}
	if grows < 5 || pageTears == 0 {
		t.Fatalf("%d reservation growths, %d torn page runs: the test no longer covers growing", grows, pageTears)
	}
	t.Logf("%d operations, %d reservation growths, %d small writes torn, %d states read, %d events", len(ops), grows, smallTears, states, final)

	jfrBin, err := exec.LookPath("jfr")
	if err != nil {
		return
	}
	dir := t.TempDir()
	for k, st := range sample {
		var data []byte
		for _, op := range ops[:st.op] {
			data = op.apply(data, len(op.data))
		}
		data = ops[st.op].apply(data, st.n)
		path := filepath.Join(dir, fmt.Sprintf("state-%d.jfr", k))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, _ := countCounted(data)
		out, err := exec.Command(jfrBin, "summary", path).CombinedOutput()
		if err != nil {
			t.Fatalf("jfr summary of the file killed in operation %d (%s, %d bytes of it done): %v\n%s", st.op, st.kind, st.n, err, out)
		}
		if !strings.Contains(string(out), " test.Counted ") && got > 0 || got > 0 && !hasCount(string(out), "test.Counted", got) {
			t.Fatalf("jfr summary of the file killed in operation %d (%s): want %d test.Counted\n%s", st.op, st.kind, got, out)
		}
	}
	t.Logf("jfr summary read %d of the states", len(sample))

	// jfr print parses the checkpoints it meets among the records, the
	// sink's padding included: one at the end of the file must be whole.
	path := filepath.Join(dir, "final.jfr")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(jfrBin, "print", "--json", "--events", "test.Counted", path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("jfr print --json of the final file: %v\n%s", err, stderr.String())
	}
	var doc struct {
		Recording struct{ Events []json.RawMessage }
	}
	if err := json.Unmarshal(out, &doc); err != nil || len(doc.Recording.Events) != final {
		t.Fatalf("jfr print --json of the final file: %d events (%v), want %d", len(doc.Recording.Events), err, final)
	}
}

// hasCount tells whether jfr summary's output counts n events of type name.
func hasCount(out, name string, n int) bool {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == name {
			return f[1] == strconv.Itoa(n)
		}
	}
	return false
}

// TestWriteVec writes a segment's pieces as the sink does, pinned (raw
// pwritev, more pieces than one call takes, pieces of a call ending inside
// a part) and through the scheduler, and reads back their bytes.
func TestWriteVec(t *testing.T) {
	var parts [][]byte
	var want []byte
	for i := range 3000 {
		p := make([]byte, 1+i*7%1500)
		for j := range p {
			p[j] = byte(i + j)
		}
		parts = append(parts, p)
		want = append(want, p...)
	}
	const skip, off = 1001, 5000
	for _, pinned := range []bool{true, false} {
		f, err := os.Create(filepath.Join(t.TempDir(), "v"))
		if err != nil {
			t.Fatal(err)
		}
		st := &steps{on: pinned && pinSteps}
		s := &fileSink{f: f, steps: st}
		st.begin()
		err = s.writeVec(parts, skip, off)
		st.end()
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(f.Name())
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != off+len(want)-skip || !bytes.Equal(got[off:], want[skip:]) {
			t.Errorf("pinned %v: the file holds %d bytes, not the %d written from byte %d on", pinned, len(got)-off, len(want)-skip, skip)
		}
	}
}
