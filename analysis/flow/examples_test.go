package flow

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// result is what a merge of some inputs printed.
type result struct {
	traces string // the trace log
	stats  string // all four reports
	m      *Merger
	list   []*Trace
}

// mergeFiles merges the inputs with a deadline, so that an input that
// would make the reference tool hang fails the test instead.
func mergeInputs(t *testing.T, ins []Input) result {
	t.Helper()
	type out struct {
		r   result
		err error
	}
	done := make(chan out, 1)
	go func() {
		var r result
		var tb bytes.Buffer
		st := NewStats()
		m, err := Merge(ins, nil, func(tr *Trace) error {
			r.list = append(r.list, tr)
			st.Add(tr)
			return WriteTrace(&tb, tr)
		})
		var sb bytes.Buffer
		st.WriteText(&sb, Reports{true, true, true, true})
		r.traces, r.stats, r.m = referenceLayout(tb.String()), sb.String(), m
		done <- out{r, err}
	}()
	select {
	case o := <-done:
		if o.err != nil {
			t.Fatal(o.err)
		}
		return o.r
	case <-time.After(20 * time.Second):
		t.Fatal("merge did not finish in 20 s")
	}
	panic("unreachable")
}

// referenceLayout rewrites a trace log in the reference tool's precision,
// so it compares with the reference output: times truncated to the ms,
// wall deltas in whole ms (the reference's column width), and without
// the duration and unfinished-span lines the reference does not print.
func referenceLayout(log string) string {
	var out []string
	var block []string
	flush := func() {
		var ms []int64
		for _, l := range block {
			if len(l) > 16 && l[2] == ':' && l[5] == ':' && l[8] == '.' && l[15] == '|' {
				h, _ := strconv.Atoi(l[0:2])
				m, _ := strconv.Atoi(l[3:5])
				sec, _ := strconv.Atoi(l[6:8])
				frac, _ := strconv.Atoi(l[9:12])
				ms = append(ms, int64(((h*60+m)*60+sec)*1000+frac))
			}
		}
		maxPos, maxNeg := int64(0), int64(0)
		for i := 1; i < len(ms); i++ {
			maxPos, maxNeg = max(maxPos, ms[i]-ms[i-1]), max(maxNeg, ms[i-1]-ms[i])
		}
		width := len(strconv.FormatInt(max(maxPos, 10*maxNeg), 10))
		i := 0
		for _, l := range block {
			if len(l) > 16 && l[2] == ':' && l[5] == ':' && l[8] == '.' && l[15] == '|' {
				rest := l[16:]
				rest = rest[strings.IndexByte(rest, '|'):]
				d := strings.Repeat(" ", width+3)
				if i > 0 {
					d = fmt.Sprintf("%*d ms", width, ms[i]-ms[i-1])
				}
				l = l[:12] + "|" + d + rest
				i++
			}
			out = append(out, l)
		}
		block = block[:0]
	}
	for _, l := range strings.Split(log, "\n") {
		if strings.HasPrefix(l, "duration ") || strings.HasSuffix(l, " unfinished spans (open when recording stopped)") {
			continue
		}
		if strings.HasPrefix(l, "TRACE ") {
			flush()
		}
		block = append(block, l)
	}
	flush()
	return strings.Join(out, "\n")
}

func exampleInputs(t *testing.T, dir string) []Input {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata/examples", dir, "[A-Z].txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no inputs in %s: %v", dir, err)
	}
	var ins []Input
	for _, f := range files {
		ins = append(ins, FileInput(f))
	}
	return ins
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section returns one report of a statistics text, from its banner (the
// line of asterisks above "* <name> *") to the blank line before the next
// banner.
func section(report, name string) string {
	lines := strings.Split(report, "\n")
	isBanner := func(i int) bool {
		return i+2 < len(lines) && strings.Trim(lines[i], "*") == "" && lines[i] != "" &&
			strings.HasPrefix(lines[i+1], "* ") && strings.Trim(lines[i+2], "*") == ""
	}
	start := -1
	for i := range lines {
		if !isBanner(i) {
			continue
		}
		if start >= 0 {
			return strings.Join(lines[start:i-1], "\n") + "\n"
		}
		if lines[i+1] == "* "+name+" *" {
			start = i
		}
	}
	if start < 0 {
		return ""
	}
	return strings.Join(lines[start:], "\n")
}

// replaceLines applies line substitutions to want and checks that each
// old line was there.
func replaceLines(t *testing.T, want string, subst ...string) string {
	t.Helper()
	for i := 0; i+1 < len(subst); i += 2 {
		if !strings.Contains(want, subst[i]) {
			t.Fatalf("reference output lacks %q", subst[i])
		}
		want = strings.ReplaceAll(want, subst[i], subst[i+1])
	}
	return want
}

// one is the distribution line of a single value v.
func one(v string) string {
	return "n 1, mean " + v + ", p50 " + v + ", p90 " + v + ", p99 " + v + ", max " + v
}

// route is the route line of a transport section.
func route(unique, total, discarded, ignored, lost, dup int) string {
	return fmt.Sprintf("%9d unique, %9d total, %5d discarded, %5d ignored, %5d lost, %5d duplicate", unique, total, discarded, ignored, lost, dup)
}

// withDuration adds the per-tag duration line the reference does not
// print to a traces report after its wall time delta line.
func withDuration(t *testing.T, report string, durations ...string) string {
	t.Helper()
	lines := strings.Split(report, "\n")
	var out []string
	for _, l := range lines {
		out = append(out, l)
		if strings.HasPrefix(l, "\tWall time delta ") {
			if len(durations) == 0 {
				t.Fatal("more traces tags than durations")
			}
			out = append(out, "\tDuration "+one(durations[0]))
			durations = durations[1:]
		}
	}
	return strings.Join(out, "\n")
}

func diffText(t *testing.T, what, got, want string) {
	t.Helper()
	if got == want {
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(gl), len(wl)); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Errorf("%s differs at line %d:\n got: %q\nwant: %q", what, i+1, g, w)
			return
		}
	}
}

// TestExample1 is request/response between two nodes with a hand-off on
// each side.
func TestExample1(t *testing.T) {
	r := mergeInputs(t, exampleInputs(t, "ex1"))
	// The trace log is the reference's, byte for byte: both nodes' wall
	// clocks agree (the offset estimate is 0: the fastest delay is 0.5 ms
	// both ways) and no two nodes share a millisecond.
	diffText(t, "trace log", r.traces, readFile(t, "testdata/examples/ex1/out.txt"))
	if r.m.Offsets[0] != 0 || r.m.Offsets[1] != 0 {
		t.Errorf("offsets %v, want 0 0", r.m.Offsets)
	}
	ref := readFile(t, "testdata/examples/ex1/stats.txt")
	// Messages: the reference computes latency only when request and
	// response carry the same tag, and never do they (request
	// PutKeyValueCommand, response RSP_PutKeyValueCommand), so it prints
	// "latency unknown" and NaN. One-way latency per direction and tag,
	// between the corrected wall clocks (offset 0 here):
	//   A->B: B.Incoming 22:13:20.001700 - A.ODStarted .001200 = 500 us
	//   B->A: A.Incoming .003100 - B.ODStarted .002600 = 500 us
	// Incoming to handle: B 7001850000 - 7001700000 = 150 us; A 100 us.
	want := "************\n* MESSAGES *\n************\n" +
		"PutKeyValueCommand\n\tIncoming to handle times:\n\t\tB:\t" + one("150.000 us") + "\n\tTransport:\n" +
		"\t\tA\t -> B:\t" + route(1, 1, 0, 0, 0, 0) + "\n\t\tA\t -> B:\tlatency " + one("500.000 us") + "\n" +
		"\t\tMean latency:\t500.000 us\tUnique messages:         1\tTotal messages:         1\n\n" +
		"RSP_PutKeyValueCommand\n\tIncoming to handle times:\n\t\tA:\t" + one("100.000 us") + "\n\tTransport:\n" +
		"\t\tB\t -> A:\t" + route(1, 1, 0, 0, 0, 0) + "\n\t\tB\t -> A:\tlatency " + one("500.000 us") + "\n" +
		"\t\tMean latency:\t500.000 us\tUnique messages:         1\tTotal messages:         1\n\n" +
		"Transmission of 0 messages not detected.\n0 messages have not been received at all.\n"
	diffText(t, "messages report", section(r.stats, "MESSAGES"), want)
	// Services: A's reply span from its Incoming to its last event, B's
	// request span likewise.
	diffText(t, "services report", section(r.stats, "SERVICES"), "************\n* SERVICES *\n************\n"+
		"A:\thandling "+one("200.000 us")+"\nB:\thandling "+one("1.000 ms")+"\n")
	// Traces: the reference is right (5 thread segments, processing 3000
	// + 30 + 150 + 60 + 900 = 4140 us, wall delta 4 - 1 = 3 ms); the
	// duration is 3 ms to the ns.
	diffText(t, "traces report", section(r.stats, "TRACES"), withDuration(t, section(ref, "TRACES"), "3.000 ms"))
	// Locks: with no lock at all the reference prints Long.MAX_VALUE and
	// Long.MIN_VALUE as extremes of nothing; there are none: NaN.
	want = replaceLines(t, section(ref, "LOCKS"),
		"(9223372036854775807 - -9223372036854775808)", "(NaN - NaN)",
		"(9223372036854776.00 - -9223372036854776.00)", "(NaN - NaN)")
	diffText(t, "locks report", section(r.stats, "LOCKS"), want)
}

// eventLines splits a trace log into the header lines and, per node, the
// event lines without the columns that depend on other nodes' events (wall
// delta and thread graph).
func eventLines(log string) (header []string, perNode map[string][]string) {
	perNode = make(map[string][]string)
	for _, l := range strings.Split(log, "\n") {
		f := strings.Split(l, "|")
		if len(f) < 7 {
			if l != "" {
				header = append(header, l)
			}
			continue
		}
		// time | wall delta | local delta | graph | node | thread | event
		perNode[f[4]] = append(perNode[f[4]], f[0]+"|"+f[2]+"|"+strings.TrimSpace(f[5])+"|"+f[6])
	}
	slices.Sort(header)
	return header, perNode
}

// TestExample2 is a multicast to three nodes with a loss, a discard and a
// non-causal retransmission.
func TestExample2(t *testing.T) {
	r := mergeInputs(t, exampleInputs(t, "ex2"))
	ref := readFile(t, "testdata/examples/ex2/out.txt")
	// Same events, same message lines (their order is hash order in the
	// reference, sorted by ID here), and every node's events in the same
	// order with the same local deltas. The interleaving across nodes
	// differs inside a millisecond: the reference orders by whole
	// milliseconds and then groups by node, so B's 22:13:20.011 events
	// (11.00 to 11.30 ms) all precede C's (11.00 to 11.05 ms); here they
	// interleave by their real (sub-millisecond) times.
	sameNodeOrder(t, r.traces, ref)
	lines := strings.Split(r.traces, "\n")
	idx := func(sub string) int {
		for i, l := range lines {
			if strings.Contains(l, sub) {
				return i
			}
		}
		t.Fatalf("no line with %q", sub)
		return -1
	}
	// C's Incoming at 11.00 ms comes before B's THSuccess at 11.10 ms.
	if c, b := idx("|C|UDP-mcast |Incoming\n"[:22]), idx("|B|Incoming-2|THSuccess"); c > b {
		t.Errorf("C's Incoming (line %d) after B's THSuccess (line %d) although 0.1 ms earlier", c, b)
	}
	// The first retransmission precedes every receipt of the retransmitted
	// copies (causality and time agree).
	if a, c := idx("Retransmission A|M0:5"), idx("|C|Incoming-1|Handling A|M0:5"); a > c {
		t.Errorf("retransmission after its receipt")
	}

	// Messages report. Route A->B: the reference assumes the first copies
	// were lost and counts the retransmission of M0:6 as lost for B, but
	// it went to C only (B had M0:6 at 11.0 ms, before the retransmission
	// at 20.1 ms). Matching every copy to the latest earlier transmission:
	//   B, M0:5: 10.6 <- 10.1 (handled: unique), 20.5 <- 20.0 (handled
	//            again: ignored);
	//   B, M0:6: 11.0 <- 10.2 (unique); 20.1 unmatched and after every
	//            matched one: not addressed to B, not lost.
	//   => 2 unique, 1 ignored, 0 lost, total 3 (the reference: 1 lost, 4).
	//   C, M0:5: 20.5 <- 20.0 (unique); 10.1 unmatched before a matched
	//            one: lost.
	//   C, M0:6: 11.0 <- 10.2 (discarded); 21.0 <- 20.1 (unique).
	//   => 2 unique, 1 discarded, 1 lost, total 4 (as the reference).
	// Incoming to handle: B 120 us (three receptions of 120 us), C 120 us
	// (two; the discard is not handled).
	// One-way latencies of the matched copies: B 0.5, 0.5, 0.8 ms; C
	// 0.5 (M0:5 at 20.5 <- 20.0), 0.83 (M0:6 discarded at 11.03 <- 10.2),
	// 0.9 ms (M0:6 at 21.0 <- 20.1).
	stats := readFile(t, "testdata/examples/ex2/stats.txt")
	want := "************\n* MESSAGES *\n************\n" +
		"PrepareCommand\n\tIncoming to handle times:\n" +
		"\t\tB:\tn 3, mean 120.000 us, p50 120.000 us, p90 120.000 us, p99 120.000 us, max 120.000 us\n" +
		"\t\tC:\tn 2, mean 120.000 us, p50 120.000 us, p90 120.000 us, p99 120.000 us, max 120.000 us\n\tTransport:\n" +
		"\t\tA\t -> B:\t" + route(2, 3, 0, 1, 0, 0) + "\n" +
		"\t\tA\t -> B:\tlatency n 3, mean 600.000 us, p50 500.000 us, p90 800.000 us, p99 800.000 us, max 800.000 us\n" +
		"\t\tA\t -> C:\t" + route(2, 4, 1, 0, 1, 0) + "\n" +
		"\t\tA\t -> C:\tlatency n 3, mean 743.333 us, p50 830.000 us, p90 900.000 us, p99 900.000 us, max 900.000 us\n" +
		"\t\tMean latency:\t671.667 us\tUnique messages:         4\tTotal messages:         7\n\n" +
		"Transmission of 0 messages not detected.\n0 messages have not been received at all.\n"
	diffText(t, "messages report", section(r.stats, "MESSAGES"), want)
	// Traces: right in the reference (13 segments, 21200 us, 20 ms).
	diffText(t, "traces report", section(r.stats, "TRACES"), withDuration(t, section(stats, "TRACES"), "20.000 ms"))
}

// TestExample5 is a chain A->B->C, a span without messages, locks and a cut.
func TestExample5(t *testing.T) {
	ins := exampleInputs(t, "ex5")
	r := mergeInputs(t, ins)
	ref := readFile(t, "testdata/examples/ex5/out.txt")
	// The traces and locks reports are the reference's, byte for byte, with
	// the durations added; the messages report has one-way latencies
	// (A->B: 101.0 - 100.2 ms, B->C: 103.0 - 102.0 ms), not the
	// reference's "latency unknown" (it needs both directions).
	refStats := readFile(t, "testdata/examples/ex5/stats.txt")
	diffText(t, "messages", section(r.stats, "MESSAGES"), "************\n* MESSAGES *\n************\n"+
		"PutKeyValueCommand\n\tIncoming to handle times:\n\t\tB:\t"+one("120.000 us")+"\n\t\tC:\t"+one("120.000 us")+"\n\tTransport:\n"+
		"\t\tA\t -> B:\t"+route(1, 1, 0, 0, 0, 0)+"\n\t\tA\t -> B:\tlatency "+one("800.000 us")+"\n"+
		"\t\tB\t -> C:\t"+route(1, 1, 0, 0, 0, 0)+"\n\t\tB\t -> C:\tlatency "+one("1.000 ms")+"\n"+
		"\t\tMean latency:\t900.000 us\tUnique messages:         2\tTotal messages:         2\n\n"+
		"Transmission of 0 messages not detected.\n0 messages have not been received at all.\n")
	diffText(t, "traces", section(r.stats, "TRACES"), withDuration(t, section(refStats, "TRACES"), "50.000 us", "10.000 ms"))
	diffText(t, "locks", section(r.stats, "LOCKS"), section(refStats, "LOCKS"))
	// The trace log differs only where B and C share the millisecond
	// 22:13:20.103: B's UNLOCK at 103.00 ms, C's Incoming at 103.00 ms
	// (tie: node name, B first) and B's TPComplete at 103.10 ms, after
	// C's first three events (103.00, 103.02, 103.03 ms). The reference
	// printed all of B's millisecond first.
	sameNodeOrder(t, r.traces, ref)
	if !strings.Contains(r.traces, "UNLOCK [k1]\n22:13:20.103|0 ms|       |..  *|C|UDP-rx|Incoming B|C|U0:3\n") {
		t.Errorf("C's Incoming does not follow B's UNLOCK:\n%s", r.traces)
	}
	// TRACE 1 (the span with no message) is the reference's.
	if i := strings.Index(ref, "TRACE 1"); !strings.HasSuffix(r.traces, ref[i:]) {
		t.Errorf("trace 1 differs:\n%s", r.traces)
	}

	// Cut: the spans of the trace of B|C|U0:3 merge back to the same trace.
	var orig *Trace
	for _, tr := range r.list {
		for _, k := range tr.Messages {
			if tr.MessageID(k) == "B|C|U0:3" {
				orig = tr
			}
		}
	}
	dir := t.TempDir()
	files, err := Cut(orig, dir)
	if err != nil {
		t.Fatal(err)
	}
	var cutIns []Input
	for _, f := range files {
		cutIns = append(cutIns, FileInput(f))
	}
	again := mergeInputs(t, cutIns)
	var want bytes.Buffer
	orig.Index = 0
	WriteTrace(&want, orig)
	diffText(t, "re-merged cut", again.traces, referenceLayout(want.String()))
	// The reference tool's own cut files read back too (its event lines end
	// with ';', dropped as Java's split drops trailing empty fields) and
	// merge to the same trace.
	mft := mergeInputs(t, []Input{
		FileInput("testdata/examples/ex5/cut/A.txt"),
		FileInput("testdata/examples/ex5/cut/B.txt"),
		FileInput("testdata/examples/ex5/cut/C.txt"),
	})
	diffText(t, "reference cut", mft.traces, referenceLayout(want.String()))
}

// TestEdgeNCDuplicate: an NC span retransmits M0:5 twice. The reference
// released the ID once per retransmission, found no counter the second time
// and its reader died. Here each (span, ID) is released once.
func TestEdgeNCDuplicate(t *testing.T) {
	for _, dir := range []string{"edge_nc_dup", "edge_hang"} {
		t.Run(dir, func(t *testing.T) {
			r := mergeInputs(t, exampleInputs(t, dir))
			if len(r.m.Errors) > 0 || r.m.IncompleteTraces > 0 {
				t.Errorf("errors %v, %d incomplete traces", r.m.Errors, r.m.IncompleteTraces)
			}
			if got := strings.Count(r.traces, "Retransmission A|M0:5"); got != 2 {
				t.Errorf("%d retransmissions of M0:5, want 2:\n%s", got, r.traces)
			}
			if dir == "edge_nc_dup" {
				// The reference's output plus the second retransmission,
				// which it lost with its reader.
				want := readFile(t, "testdata/examples/edge_nc_dup/out.txt")
				want = strings.Replace(want, "\n\n", "\n22:13:20.030|10 ms|10.0 ms|*   |A|Timer-1   |Retransmission A|M0:5\n\n", 1)
				diffText(t, "trace log", r.traces, want)
			} else {
				// edge_hang: 200 spans without messages on B, each its own
				// trace, plus A's; the reference hung with -d 100.
				if n := len(r.list); n != 201 {
					t.Errorf("%d traces, want 201", n)
				}
			}
		})
	}
}

// TestEdgeLoopback: A handles its own multicast without an Incoming (local
// delivery); the reference threw a NullPointerException in the messages
// report and lost the trace from it.
func TestEdgeLoopback(t *testing.T) {
	r := mergeInputs(t, exampleInputs(t, "edge_loopback"))
	diffText(t, "trace log", r.traces, readFile(t, "testdata/examples/edge_loopback/out.txt"))
	// A|M0:9: sent by A at 10.00 ms, handled by A at 10.22 ms (local
	// delivery: the reception is the handling, no incoming-to-handle
	// delay) and by B (Incoming 10.60, Handling 10.72: 120 us). Latency:
	// A to itself 220 us, to B 600 us.
	msgs := section(r.stats, "MESSAGES")
	for _, want := range []string{
		"-no-tag-\n\tIncoming to handle times:\n\t\tB:\t" + one("120.000 us") + "\n",
		"\t\tA\t -> A:\t" + route(1, 1, 0, 0, 0, 0) + "\n\t\tA\t -> A:\tlatency " + one("220.000 us") + "\n",
		"\t\tA\t -> B:\t" + route(1, 1, 0, 0, 0, 0) + "\n\t\tA\t -> B:\tlatency " + one("600.000 us") + "\n",
		"Unique messages:         2\tTotal messages:         2\n",
		"Transmission of 0 messages not detected.\n0 messages have not been received at all.\n",
	} {
		if !strings.Contains(msgs, want) {
			t.Errorf("messages report lacks %q:\n%s", want, msgs)
		}
	}
}

// sameNodeOrder checks that two trace logs have the same trace headers and,
// node by node, the same events in the same order: the order across nodes
// may differ within a millisecond (see the callers).
func sameNodeOrder(t *testing.T, got, ref string) {
	t.Helper()
	gh, gn := eventLines(got)
	wh, wn := eventLines(ref)
	if !slices.Equal(gh, wh) {
		t.Errorf("header lines\n got %q\nwant %q", gh, wh)
	}
	for node, want := range wn {
		if !slices.Equal(gn[node], want) {
			t.Errorf("node %s events\n got %q\nwant %q", node, gn[node], want)
		}
	}
}
