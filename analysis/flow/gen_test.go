package flow

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// genLog streams the span log of one node of a generated cluster without
// holding it in memory. Request j (0 <= j < requests) goes from node
// s = j % nodes to node r (another node, rotating), which handles it and
// replies; s receives the reply. True time of request j is j µs; each
// node's wall clock is off by its index in milliseconds, which the merge
// must correct. Seven events and two messages per request:
//
//	s: SPAN;null;s:j           ODStarted, ODFinished
//	r: SPAN;s:j;r:j            Incoming, Handling, ODStarted
//	s: SPAN;r:j                Incoming, Handling
type genLog struct {
	node, nodes, requests int
	j                     int
	buf                   []byte
	off                   int
}

func genInputs(nodes, requests int) []Input {
	ins := make([]Input, nodes)
	for i := range ins {
		ins[i] = Input{Name: fmt.Sprintf("n%d.txt", i), Open: func() (io.ReadCloser, error) {
			g := &genLog{node: i, nodes: nodes, requests: requests}
			g.buf = fmt.Appendf(nil, "0=%d\n", 1700000000000+i)
			return io.NopCloser(g), nil
		}}
	}
	return ins
}

func (g *genLog) Read(p []byte) (int, error) {
	for g.off == len(g.buf) {
		if g.j == g.requests {
			return 0, io.EOF
		}
		g.buf, g.off = g.buf[:0], 0
		for k := 0; k < 256 && g.j < g.requests; k++ {
			g.span(g.j)
			g.j++
		}
	}
	n := copy(p, g.buf[g.off:])
	g.off += n
	return n, nil
}

func (g *genLog) span(j int) {
	s := j % g.nodes
	r := (s + 1 + (j/g.nodes)%(g.nodes-1)) % g.nodes
	t := int64(j) * 1000
	// Every node's nanoTime is the true time in ns; node i's wall origin
	// is i ms ahead.
	b := g.buf
	ev := func(dt int64, thread, typ string, id ...int) {
		b = append(b, "E;"...)
		b = strconv.AppendInt(b, t+dt, 10)
		b = append(b, ';')
		b = append(b, thread...)
		b = append(b, ';')
		b = append(b, typ...)
		if len(id) == 2 {
			b = append(b, ';')
			b = strconv.AppendInt(b, int64(id[0]), 10)
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(id[1]), 10)
		}
		b = append(b, '\n')
	}
	id := func(n int) {
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(j), 10)
	}
	if g.node == s {
		b = append(b, "SPAN;null;"...)
		id(s)
		b = append(b, '\n')
		ev(0, "main", "ODStarted", s, j)
		ev(1000, "main", "ODFinished")
	}
	if g.node == r {
		b = append(b, "SPAN;"...)
		id(s)
		b = append(b, ';')
		id(r)
		b = append(b, '\n')
		ev(40000, "rx", "Incoming")
		ev(45000, "rx", "Handling", s, j)
		ev(60000, "rx", "ODStarted", r, j)
	}
	if g.node == s {
		b = append(b, "SPAN;"...)
		id(r)
		b = append(b, '\n')
		ev(100000, "rx", "Incoming")
		ev(105000, "rx", "Handling", r, j)
	}
	g.buf = b
}

// peakSampler samples the live heap every few milliseconds.
type peakSampler struct {
	peak atomic.Uint64
	stop chan struct{}
	done chan struct{}
}

func startPeakSampler() *peakSampler {
	p := &peakSampler{stop: make(chan struct{}), done: make(chan struct{})}
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(samples)
			if v := samples[0].Value.Uint64(); v > p.peak.Load() {
				p.peak.Store(v)
			}
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

func (p *peakSampler) end() uint64 {
	close(p.stop)
	<-p.done
	return p.peak.Load()
}

// TestGeneratedMemory merges a generated run of 2 million messages (1
// million requests and their replies, 7 million events, 5 nodes whose
// clocks are off by 0 to 4 ms) and checks that memory stays bounded: only
// the traces in flight are open, and the heap stays within the per-message
// counts plus a small constant.
func TestGeneratedMemory(t *testing.T) {
	requests := 1_000_000
	if testing.Short() {
		requests = 100_000
	}
	runtime.GC()
	p := startPeakSampler()
	start := time.Now()
	traces := 0
	m, err := Merge(genInputs(5, requests), nil, func(tr *Trace) error {
		traces++
		if len(tr.Messages) != 2 || len(tr.Events) != 7 || tr.Inconsistencies != 0 || tr.Incomplete {
			return fmt.Errorf("trace %d: %d messages, %d events, %d inconsistencies", tr.Index, len(tr.Messages), len(tr.Events), tr.Inconsistencies)
		}
		return nil
	})
	peak := p.end()
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	t.Logf("%d requests, %d events, %d traces in %v (%.2f M input events/s, both passes included); peak heap %.1f MiB, %d traces and %d events open at most; offsets %v",
		requests, m.Events, traces, el, float64(m.Events)/el.Seconds()/1e6, float64(peak)/(1<<20), m.PeakOpenTraces, m.PeakOpenEvents, m.Offsets)
	if traces != requests {
		t.Errorf("%d traces, want %d", traces, requests)
	}
	// The generated clocks are off by i ms and the fastest delays are
	// 40 µs one way and 40 µs back, so the offsets are recovered exactly.
	for i, o := range m.Offsets {
		if o != int64(i)*1e6 {
			t.Errorf("offset of node %d = %d, want %d", i, o, i*1e6)
		}
	}
	// Requests are 1 µs apart and a trace lasts 105 µs: about a hundred
	// are in flight; the inputs are read time-aligned, so open traces stay
	// in the hundreds however long the run.
	if m.PeakOpenTraces > 2000 {
		t.Errorf("%d traces open at once", m.PeakOpenTraces)
	}
	// Per message: its counter slot and integer ID, reference count and
	// open-trace slot (20 bytes), the first-send time and node during
	// pass 1 (10 bytes), doubled by the garbage collector's headroom, with
	// room to spare: 100 bytes, plus a constant.
	if limit := uint64(requests) * 2 * 100; peak > limit+64<<20 {
		t.Errorf("peak heap %d bytes, over %d", peak, limit+64<<20)
	}
}

var benchRequests = flag.Int("flow.requests", 100_000, "requests of the generated 5-node merge benchmark (7 events each; 1430000 gives 10 M events)")

// BenchmarkMerge merges a generated 5-node input and reports merge
// throughput (events per second over both passes, and per event of the
// input) and the peak live heap. For the 10 M-event run:
//
//	go test ./analysis/flow -run '^$' -bench Merge -benchtime 1x -flow.requests 1430000
func BenchmarkMerge(b *testing.B) {
	ins := genInputs(5, *benchRequests)
	runtime.GC()
	p := startPeakSampler()
	var events int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m, err := Merge(ins, nil, func(*Trace) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
		events += m.Events
	}
	b.StopTimer()
	peak := p.end()
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(maxRSS())/(1<<20), "maxrss-MiB")
}
