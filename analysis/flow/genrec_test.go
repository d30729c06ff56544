package flow

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/flightrec/flightrec/internal/flowspec"
	"github.com/flightrec/flightrec/jfr"
)

var genDir = flag.String("flow.gendir", "", "TestWriteGenRecordings writes the generated cluster's flow recordings (-flow.requests requests) to this directory")

// TestWriteGenRecordings writes the cluster of genInputs as five flow
// recordings, n0.jfr..n4.jfr, for measuring `flightrec flow` as a user
// runs it:
//
//	go test ./analysis/flow -run WriteGenRecordings -flow.gendir /dev/shm/flowgen -flow.requests 5000000
//
// Node i is number i; request j's IDs have counter j+1 (a compact ID of 0
// is no ID). Like the recorder, it ends a chunk at about 12 MiB.
func TestWriteGenRecordings(t *testing.T) {
	if *genDir == "" {
		t.Skip("-flow.gendir not set")
	}
	if err := os.MkdirAll(*genDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := writeGenRecording(filepath.Join(*genDir, fmt.Sprintf("n%d.jfr", i)), i, 5, *benchRequests); err != nil {
			t.Fatal(err)
		}
	}
}

// spansPerChunk fills the recorder's default maximum chunk size, 12 MiB,
// with the generated spans of about 72 bytes each.
const spansPerChunk = 12 << 20 / 72

// writeGenRecording writes node's recording of genLog's schedule.
func writeGenRecording(path string, node, nodes, requests int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	md, err := FlowMetadata()
	if err != nil {
		return err
	}
	originWall := int64(1700000000000+node) * 1e6
	w := jfr.NewWriter(f, &jfr.WriterOptions{StartNanos: originWall, StartTicks: 0, TicksPerSecond: 1e9,
		Now: func() int64 { return 0 }})
	if err := w.SetMetadata(md); err != nil {
		return err
	}
	type class struct {
		cl   *jfr.Class
		vals []jfr.Value
		idx  map[string]int
	}
	classes := map[string]*class{}
	get := func(name string) *class {
		c := classes[name]
		if c == nil {
			cl := md.ClassByName(name)
			c = &class{cl: cl, vals: make([]jfr.Value, len(cl.Fields)), idx: map[string]int{}}
			for i, fd := range cl.Fields {
				c.idx[fd.Name] = i
				switch {
				case fd.Array:
					c.vals[i] = jfr.ArrayValue(fd.Type)
				case fd.Type.Name == "java.lang.String":
					c.vals[i] = jfr.Null()
				case fd.Type.Name == "boolean":
					c.vals[i] = jfr.BoolValue(false)
				default:
					c.vals[i] = jfr.IntValue(jfr.KindLong, 0)
				}
			}
			classes[name] = c
		}
		return c
	}
	threads := map[string]jfr.Value{"main": jfr.StringValue("main"), "rx": jfr.StringValue("rx")}
	span := int64(0)
	ev := func(kind flowspec.Kind, ticks int64, thread string, id int64) error {
		c := get(typeOfKind[kind])
		c.vals[0] = jfr.IntValue(jfr.KindLong, ticks)
		c.vals[c.idx[flowspec.FieldSpan]] = jfr.IntValue(jfr.KindLong, span)
		c.vals[c.idx[flowspec.FieldThread]] = threads[thread]
		if i, ok := c.idx[flowspec.FieldMessage]; ok {
			c.vals[i] = jfr.IntValue(jfr.KindLong, id)
		}
		return w.WriteEvent(c.cl, c.vals)
	}
	end := func(ticks, in, out int64) error {
		c := get(flowspec.SpanEvent)
		c.vals[0] = jfr.IntValue(jfr.KindLong, ticks)
		c.vals[c.idx[flowspec.FieldSpan]] = jfr.IntValue(jfr.KindLong, span)
		c.vals[c.idx[flowspec.FieldIncoming]] = jfr.IntValue(jfr.KindLong, in)
		outType := c.cl.Fields[c.idx[flowspec.FieldOutgoing]].Type
		if out != 0 {
			c.vals[c.idx[flowspec.FieldOutgoing]] = jfr.ArrayValue(outType, jfr.IntValue(jfr.KindLong, out))
		} else {
			c.vals[c.idx[flowspec.FieldOutgoing]] = jfr.ArrayValue(outType)
		}
		return w.WriteEvent(c.cl, c.vals)
	}
	nc := get(flowspec.NodeEvent)
	nc.vals[0] = jfr.IntValue(jfr.KindLong, 0)
	nc.vals[nc.idx[flowspec.FieldNodeName]] = jfr.StringValue(fmt.Sprintf("n%d", node))
	nc.vals[nc.idx[flowspec.FieldNodeNumber]] = jfr.IntValue(jfr.KindLong, int64(node))
	if err := w.WriteEvent(nc.cl, nc.vals); err != nil {
		return err
	}
	id := func(n, j int) int64 { return flowspec.MessageID(uint16(n), uint64(j)+1) }
	// The spans of one node in the order genLog writes them.
	for j := range requests {
		s := j % nodes
		r := (s + 1 + (j/nodes)%(nodes-1)) % nodes
		t := int64(j) * 1000
		steps := []func() error{}
		if node == s {
			steps = append(steps, func() error {
				span++
				if err := ev(flowspec.SendStarted, t, "main", id(s, j)); err != nil {
					return err
				}
				if err := ev(flowspec.SendWritten, t+1000, "main", 0); err != nil {
					return err
				}
				return end(t+1000, 0, id(s, j))
			})
		}
		if node == r {
			steps = append(steps, func() error {
				span++
				if err := ev(flowspec.Received, t+40000, "rx", 0); err != nil {
					return err
				}
				if err := ev(flowspec.HandleStart, t+45000, "rx", id(s, j)); err != nil {
					return err
				}
				if err := ev(flowspec.SendStarted, t+60000, "rx", id(r, j)); err != nil {
					return err
				}
				return end(t+60000, id(s, j), id(r, j))
			})
		}
		if node == s {
			steps = append(steps, func() error {
				span++
				if err := ev(flowspec.Received, t+100000, "rx", 0); err != nil {
					return err
				}
				if err := ev(flowspec.HandleStart, t+105000, "rx", id(r, j)); err != nil {
					return err
				}
				return end(t+105000, id(r, j), 0)
			})
		}
		for _, step := range steps {
			if span > 0 && span%spansPerChunk == 0 {
				if err := w.StartChunk(t); err != nil {
					return err
				}
			}
			if err := step(); err != nil {
				return err
			}
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return f.Close()
}

// BenchmarkMergeRecordings merges the generated cluster's five flow
// recordings (written once to a temporary directory, -flow.requests
// requests) and adds every trace to the statistics, as `flightrec flow
// stats` does: the whole path a user runs, recording decoding included.
//
//	go test ./analysis/flow -run '^$' -bench MergeRecordings -benchtime 1x -flow.requests 1000000
//
// With -flow.gendir it merges the recordings TestWriteGenRecordings wrote
// there instead, so that profiles of a large merge hold no writing:
//
//	go test ./analysis/flow -run '^$' -bench MergeRecordings -benchtime 1x -flow.gendir /dev/shm/flowgen -cpuprofile cpu.prof
func BenchmarkMergeRecordings(b *testing.B) {
	dir := *genDir
	if dir == "" {
		dir = b.TempDir()
	}
	var inputs []Input
	for i := range 5 {
		path := filepath.Join(dir, fmt.Sprintf("n%d.jfr", i))
		if *genDir == "" {
			if err := writeGenRecording(path, i, 5, *benchRequests); err != nil {
				b.Fatal(err)
			}
		}
		inputs = append(inputs, FileInput(path))
	}
	runtime.GC()
	p := startPeakSampler()
	var events int64
	b.ResetTimer()
	for range b.N {
		st := NewStats()
		m, err := Merge(inputs, nil, func(t *Trace) error { st.Add(t); return nil })
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
