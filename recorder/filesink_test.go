package recorder

import (
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
// before each page it copies). A 6-byte write that switches a filler
// header is left whole: one that straddles a page boundary could tear in
// principle, the one case the sink leaves (its comment says why).
func (op fileOp) tears() []int {
	var at []int
	if op.truncate || len(op.data) <= jfr.FillerHeaderSize {
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
	// After a flushpoint returns, the file holds its events: marks[i] is
	// how many once the first ops[i] operations are done.
	type mark struct{ ops, events int }
	var marks []mark
	dropped0 := theSession.s.DroppedEvents.Load()
	emitted := 0
	for round := range 60 {
		n := 200 + round*37%400 // vary the sizes, so that writes end anywhere in a page
		emitCounted(n, emitted)
		emitted += n
		theSession.flushNow()
		marks = append(marks, mark{log.len(), emitted - int(theSession.s.DroppedEvents.Load()-dropped0)})
	}
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	final := marks[len(marks)-1].events
	marks = append(marks, mark{log.len(), final})

	// A state is the file after the first i operations and n bytes of
	// operation i (n = -1: none of it).
	type state struct {
		op, n int
		kind  string
	}
	var file []byte
	var sample []state
	grows, pageTears, states := 0, 0, 0
	check := func(st state, data []byte) {
		t.Helper()
		want := 0
		for _, m := range marks {
			if m.ops <= st.op || m.ops == st.op+1 && st.n == len(log.ops[st.op].data) {
				want = m.events
			}
		}
		if dir := os.Getenv("FLIGHTREC_KILLED_STATES"); dir != "" {
			// For checking the states with other readers by hand.
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("state-%04d-%d-%s.jfr", st.op, st.n, strings.ReplaceAll(st.kind, " ", "-"))), data, 0o644)
		}
		got, err := countCounted(data)
		if err != nil {
			t.Fatalf("killed in operation %d of %d (%s, %d bytes of it done): %v", st.op, len(log.ops), st.kind, st.n, err)
		}
		if got < want || got > final {
			t.Fatalf("killed in operation %d of %d (%s, %d bytes of it done): %d events, want %d to %d", st.op, len(log.ops), st.kind, st.n, got, want, final)
		}
		states++
	}
	ops := log.ops
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
				if kind == "reservation pages" {
					pageTears++
					if pageTears == 2 {
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
	t.Logf("%d operations, %d reservation growths, %d states read, %d events", len(ops), grows, states, final)

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
