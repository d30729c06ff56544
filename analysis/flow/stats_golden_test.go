package flow

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/flightrec/flightrec/internal/flowspec"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/stats_random.golden from the code under test")

// splitmix is a tiny deterministic generator, so that the random traces
// stay the same whatever math/rand does in later Go releases.
type splitmix uint64

func (s *splitmix) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func (s *splitmix) intn(n int) int { return int(s.next() % uint64(n)) }

// randomTrace builds a trace as pass 2 hands it to the finishing: spans
// of several nodes one after the other, each span's events in its clock's
// order, events of every kind the statistics read, with ties in the
// clocks, messages sent twice or never, received on several nodes,
// discarded, tags, lock and interceptor checkpoints.
func randomTrace(r *splitmix, m *Merger, index int, nextSpan []uint32) *Trace {
	nodes := len(m.Nodes)
	msgs := 1 + r.intn(5)
	if r.intn(8) == 0 {
		msgs = 20 + r.intn(30) // beyond smallMap's scan
	}
	spans := 1 + r.intn(6)
	if msgs > 5 {
		spans = msgs + r.intn(msgs)
	}
	kinds := []flowspec.Kind{flowspec.Received, flowspec.HandleStart, flowspec.SendStarted, flowspec.SendStarted,
		flowspec.NonCausalSend, flowspec.Discard, flowspec.MessageTag, flowspec.TraceTag, flowspec.Checkpoint,
		flowspec.WorkComplete, flowspec.SendWritten, flowspec.HandleEnd}
	texts := map[flowspec.Kind][]string{
		flowspec.MessageTag: {"GET", "PUT", "ack", "PUT"},
		flowspec.TraceTag:   {"read", "write", "read"},
		flowspec.Checkpoint: {"LOCK k1", "LOCK k2", "LOCK_OK", "LOCK_FAIL", "UNLOCK [k1, k2]", "UNLOCK k1",
			"INT Put@>@A", "INT Put@>@B", "INT Put@<@B", "INT Put@<@A", "INT Get@>@A", "INT Get@<@A", "other"},
	}
	t := &Trace{Index: index, m: m}
	base := int64(1_700_000_000_000_000_000) + int64(index)*1_000_000
	for range spans {
		node := uint16(r.intn(nodes))
		nextSpan[node]++
		span := nextSpan[node]
		thread := uint32(r.intn(3))
		ordinal := uint32(r.intn(3)) // 0: a non-causal span
		nano := base + int64(r.intn(200))*1000
		offset := int64(node)*7000 - int64(r.intn(3))*1000
		n := 1 + r.intn(6)
		for seq := range n {
			k := kinds[r.intn(len(kinds))]
			if seq == 0 && r.intn(2) == 0 {
				k = flowspec.Received
			}
			e := Event{Nano: nano, Wall: nano + offset, RawWall: nano + offset + 5, Msg: -1, Thread: thread,
				Span: span, Ordinal: ordinal, Seq: uint32(seq), Node: node, Kind: k}
			switch k {
			case flowspec.Received, flowspec.HandleStart, flowspec.SendStarted, flowspec.NonCausalSend, flowspec.Discard:
				if r.intn(10) > 0 {
					e.Msg = int32(r.intn(msgs))
				}
			}
			if ts := texts[k]; ts != nil {
				e.Text = ts[r.intn(len(ts))]
			}
			if r.intn(4) == 0 {
				e.Thread = uint32(r.intn(3))
			}
			t.Events = append(t.Events, e)
			if r.intn(3) > 0 { // else a tie with the next event
				nano += int64(r.intn(50_000))
			}
		}
	}
	// The messages' IDs: compact ones of the nodes' numbers and of a node
	// without input (9), and texts.
	keys := make([]int32, msgs)
	for i := range keys {
		var id string
		switch r.intn(6) {
		case 0:
			id = fmt.Sprintf("9:%d", index*100+i)
		case 1:
			id = fmt.Sprintf("req-%d-%d", index, r.intn(1000))
		default:
			id = fmt.Sprintf("%d:%d", r.intn(nodes), index*100+i)
		}
		k, _ := m.ids.Intern(appendWireText(nil, []byte(id)))
		keys[i] = int32(k)
	}
	for i := range t.Events {
		if e := &t.Events[i]; e.Msg >= 0 {
			e.Msg = keys[e.Msg]
		}
	}
	t.Messages = keys
	return t
}

// TestRandomTracesGolden orders random traces (randomTrace) and adds them
// to the statistics, and compares the events' order, the inconsistencies
// counted and every report, as text and as JSON, with what the code
// wrote before the finishing and the statistics were made faster
// (testdata/stats_random.golden; -update rewrites it). A statistic or an
// order computed otherwise than before fails it.
func TestRandomTracesGolden(t *testing.T) {
	var out bytes.Buffer
	st, order := randomStats(2000)
	fmt.Fprintf(&out, "order %x\n", order)
	if err := st.WriteText(&out, Reports{true, true, true, true}); err != nil {
		t.Fatal(err)
	}
	js, err := json.MarshalIndent(st.JSON(Reports{true, true, true, true}), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	out.Write(js)
	out.WriteByte('\n')
	const golden = "testdata/stats_random.golden"
	if *updateGolden {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := readFile(t, golden)
	diffText(t, "random traces' statistics", out.String(), want)
}

// randomStats orders n random traces and adds them to new statistics;
// it returns them and a digest of the traces' events in their order and
// their inconsistencies.
func randomStats(n int) (*Stats, []byte) {
	m := randomMerger()
	out := &traceOut{m: m}
	r := splitmix(1)
	nextSpan := make([]uint32, len(m.Nodes))
	st := NewStats()
	h := sha256.New()
	for i := range n {
		tr := randomTrace(&r, m, i, nextSpan)
		out.finish(tr)
		fmt.Fprintf(h, "trace %d inconsistencies %d messages %v\n", i, tr.Inconsistencies, tr.Messages)
		for _, e := range tr.Events {
			fmt.Fprintf(h, "%d %d %d\n", e.Node, e.Span, e.Seq)
		}
		st.Add(tr)
	}
	return st, h.Sum(nil)
}

// randomMerger is the merge of randomTrace's nodes, whose ranks by name
// differ from their numbers; node 9 sends messages but has no input.
func randomMerger() *Merger {
	return &Merger{Nodes: []string{"n2", "n0", "b", "a", "n1"}, MissingNodes: []uint16{9}, ids: newIDTable()}
}

// benchTraces returns n traces for the finishing's benchmarks: random
// ones (randomTrace), or those of the generated cluster (genInputs: seven
// events, two messages, three spans on two nodes), in the layout pass 2
// hands them over in (spans one after the other, unordered).
func benchTraces(b *testing.B, kind string, n int) []*Trace {
	var list []*Trace
	switch kind {
	case "random":
		m := randomMerger()
		r := splitmix(1)
		nextSpan := make([]uint32, len(m.Nodes))
		for i := range n {
			list = append(list, randomTrace(&r, m, i, nextSpan))
		}
	case "generated":
		_, err := Merge(genInputs(5, n), nil, func(t *Trace) error {
			c := *t
			c.Events = spanLayout(t.Events)
			list = append(list, &c)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return list
}

// spanLayout returns the events grouped by span, spans in the order their
// last events come: as pass 2 appends a span when it ends.
func spanLayout(evs []Event) []Event {
	type ref struct {
		node uint16
		span uint32
	}
	var order []ref
	last := map[ref]int{}
	for i, e := range evs {
		k := ref{e.Node, e.Span}
		if _, ok := last[k]; !ok {
			order = append(order, k)
		}
		last[k] = i
	}
	// Spans by their last event's position.
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && last[order[j]] < last[order[j-1]]; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	out := make([]Event, 0, len(evs))
	for _, k := range order {
		for _, e := range evs {
			if e.Node == k.node && e.Span == k.span {
				out = append(out, e)
			}
		}
	}
	return out
}

// BenchmarkTraceFinish measures the finishing's two parts per trace, on
// the generated cluster's traces and on random ones: ordering the events
// (Trace.order) and adding the trace to the statistics (Stats.Add).
//
//	go test ./analysis/flow -run '^$' -bench TraceFinish
func BenchmarkTraceFinish(b *testing.B) {
	for _, kind := range []string{"generated", "random"} {
		traces := benchTraces(b, kind, 20000)
		events := 0
		for _, t := range traces {
			events += len(t.Events)
		}
		work := make([][]Event, len(traces))
		for i, t := range traces {
			work[i] = make([]Event, len(t.Events))
		}
		b.Run("order/"+kind, func(b *testing.B) {
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t := traces[i%len(traces)]
				c := *t
				c.Events = work[i%len(traces)]
				copy(c.Events, t.Events)
				c.order()
			}
			b.ReportMetric(float64(events)/float64(len(traces)), "events/trace")
		})
		for _, t := range traces {
			t.order()
		}
		b.Run("stats/"+kind, func(b *testing.B) {
			st := NewStats()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				st.Add(traces[i%len(traces)])
			}
		})
	}
}
