package perfetto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/flightrec/flightrec/analysis/flow"
	"github.com/flightrec/flightrec/internal/testrec"
	"github.com/flightrec/flightrec/jfr"
)

// decoded is a Perfetto trace read back with protowire.
type decoded struct {
	packets  int
	tracks   map[uint64]string // uuid -> thread or track name
	parents  map[uint64]uint64
	procs    map[uint64]string // uuid -> process name
	counters map[uint64]bool
	begins   map[string]int // slice name -> count
	instants map[string]int
	values   int // counter values
	flowOut  map[uint64]uint64
	flowIn   map[uint64]uint64 // flow id -> timestamp
	annots   map[string]int    // debug annotation name -> count
}

// fields splits a message into (number, type, raw value) triples.
func fields(t *testing.T, b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, x uint64)) {
	t.Helper()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			x, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			t.Fatalf("unexpected wire type %d", typ)
		}
		if n < 0 {
			t.Fatalf("bad field %d of wire type %d: %v", num, typ, protowire.ParseError(n))
		}
		fn(num, typ, v, x)
		b = b[n:]
	}
}

// decode reads a trace back and checks what every consumer relies on:
// timestamps in order, every slice ended on the track it began on, slices
// on a track nested, events only on declared tracks.
func decode(t *testing.T, data []byte) *decoded {
	t.Helper()
	d := &decoded{tracks: map[uint64]string{}, parents: map[uint64]uint64{}, procs: map[uint64]string{}, counters: map[uint64]bool{},
		begins: map[string]int{}, instants: map[string]int{}, flowOut: map[uint64]uint64{}, flowIn: map[uint64]uint64{}, annots: map[string]int{}}
	open := map[uint64][]string{}
	var last uint64
	fields(t, data, func(num protowire.Number, _ protowire.Type, pkt []byte, _ uint64) {
		if num != traceFieldPacket {
			t.Fatalf("Trace field %d", num)
		}
		d.packets++
		var ts uint64
		fields(t, pkt, func(num protowire.Number, _ protowire.Type, v []byte, x uint64) {
			switch num {
			case packetTimestamp:
				ts = x
				if ts < last {
					t.Fatalf("timestamp %d after %d", ts, last)
				}
				last = ts
			case packetTrackDescriptor:
				var uuid uint64
				var name string
				var proc, counter bool
				fields(t, v, func(num protowire.Number, _ protowire.Type, v []byte, x uint64) {
					switch num {
					case descUUID:
						uuid = x
					case descName:
						name = string(v)
					case descParentUUID:
						d.parents[uuid] = x
					case descCounter:
						counter = true
					case descProcess, descThread:
						proc = num == descProcess
						fields(t, v, func(num protowire.Number, _ protowire.Type, v []byte, x uint64) {
							if num == processName || num == threadName {
								name = string(v)
							}
						})
					}
				})
				if proc {
					d.procs[uuid] = name
				} else {
					d.tracks[uuid] = name
					d.counters[uuid] = counter
				}
			case packetTrackEvent:
				var typ, track uint64
				var name string
				var flows, terms []uint64
				fields(t, v, func(num protowire.Number, _ protowire.Type, v []byte, x uint64) {
					switch num {
					case eventType:
						typ = x
					case eventTrackUUID:
						track = x
					case eventName:
						name = string(v)
					case eventFlowIDs:
						flows = append(flows, x)
					case eventTerminatingFlowID:
						terms = append(terms, x)
					case eventDebugAnnotations:
						fields(t, v, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) {
							if num == annotationName {
								d.annots[string(v)]++
							}
						})
					}
				})
				if _, ok := d.tracks[track]; !ok {
					t.Fatalf("event on undeclared track %d", track)
				}
				switch typ {
				case typeSliceBegin:
					d.begins[name]++
					open[track] = append(open[track], name)
				case typeSliceEnd:
					if len(open[track]) == 0 {
						t.Fatalf("slice end at %d on track %q with no open slice", ts, d.tracks[track])
					}
					open[track] = open[track][:len(open[track])-1]
				case typeInstant:
					d.instants[name]++
				case typeCounter:
					if !d.counters[track] {
						t.Fatalf("counter value on a non-counter track %q", d.tracks[track])
					}
					d.values++
				}
				for _, f := range flows {
					d.flowOut[f] = ts
				}
				for _, f := range terms {
					d.flowIn[f] = ts
				}
			}
		})
	})
	for tr, st := range open {
		if len(st) > 0 {
			t.Errorf("track %q: %d slices never ended", d.tracks[tr], len(st))
		}
	}
	return d
}

func convert(t *testing.T, inputs []Input, f Format) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, inputs, Options{Format: f}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// counts reads the recording directly: timed events with a duration per
// type, and the other events per type.
func counts(t *testing.T, data []byte) (timed, instant map[string]int) {
	timed, instant = map[string]int{}, map[string]int{}
	r := jfr.NewBytesReader(data, nil)
	var ev jfr.Event
	for {
		err := r.ReadEvent(&ev)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.DurationTicks() > 0 {
			timed[ev.Type.Name]++
		} else {
			instant[ev.Type.Name]++
		}
	}
}

func TestJDKRecordingProto(t *testing.T) {
	data := testrec.Bytes(t, "jdk17-sample.jfr.gz")
	out := convert(t, []Input{{Name: "jdk17.jfr", Reader: jfr.NewBytesReader(data, &jfr.ReaderOptions{PerChunkClock: true})}}, Proto)
	d := decode(t, out)
	timed, instant := counts(t, data)
	for _, typ := range []string{"demo.Work", "jdk.GCPhaseParallel", "jdk.GarbageCollection"} {
		if d.begins[typ] != timed[typ] || timed[typ] == 0 {
			t.Errorf("%s: %d slices, want %d", typ, d.begins[typ], timed[typ])
		}
	}
	if d.instants["jdk.ExecutionSample"] != instant["jdk.ExecutionSample"] || instant["jdk.ExecutionSample"] == 0 {
		t.Errorf("jdk.ExecutionSample: %d instants, want %d", d.instants["jdk.ExecutionSample"], instant["jdk.ExecutionSample"])
	}
	// Fields become annotations: every GC phase has its gcId.
	if d.annots["gcId"] < timed["jdk.GCPhaseParallel"] {
		t.Errorf("%d gcId annotations for %d GC phases", d.annots["gcId"], timed["jdk.GCPhaseParallel"])
	}
	if len(d.procs) != 1 || d.procs[procUUID(0)] != "jdk17.jfr" {
		t.Errorf("processes %v", d.procs)
	}
	names := map[string]bool{}
	for _, n := range d.tracks {
		names[n] = true
	}
	for _, want := range []string{"main", "jdk.CPULoad.machineTotal", "jdk.GCHeapSummary.heapUsed"} {
		if !names[want] {
			t.Errorf("no track %q", want)
		}
	}
	// Counters: three series per jdk.CPULoad event and so on.
	if want := 3*instant["jdk.CPULoad"] + instant["jdk.GCHeapSummary"] + instant["jdk.JavaThreadStatistics"]; d.values != want {
		t.Errorf("%d counter values, want %d", d.values, want)
	}
}

// protocDecode checks the trace against the schema with protoc: every
// field known (a wrong number would print as a bare number), every
// packet decoded.
func protocDecode(t *testing.T, trace []byte) {
	t.Helper()
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		t.Log("protoc not installed (Debian protobuf-compiler): schema check skipped")
		return
	}
	cmd := exec.Command(protoc, "--decode=perfetto.protos.Trace", "-I", "testdata", "trace_subset.proto")
	cmd.Stdin = bytes.NewReader(trace)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("protoc --decode: %v\n%s", err, stderr.String())
	}
	if m := regexp.MustCompile(`(?m)^\s*[0-9]+: .*$`).Find(out); m != nil {
		t.Errorf("protoc found a field not in the schema: %s", m)
	}
	if n := bytes.Count(out, []byte("packet {")); n != decodeCount(t, trace) {
		t.Errorf("protoc decoded %d packets, want %d", n, decodeCount(t, trace))
	}
}

func decodeCount(t *testing.T, trace []byte) int {
	n := 0
	fields(t, trace, func(protowire.Number, protowire.Type, []byte, uint64) { n++ })
	return n
}

func TestJDKRecordingJSON(t *testing.T) {
	data := testrec.Bytes(t, "jdk17-alltypes.jfr.gz")
	out := convert(t, []Input{{Name: "jdk17.jfr", Reader: jfr.NewBytesReader(data, &jfr.ReaderOptions{PerChunkClock: true})}}, JSON)
	var doc struct {
		TraceEvents []struct {
			Ph   string         `json:"ph"`
			Name string         `json:"name"`
			Ts   float64        `json:"ts"`
			Dur  float64        `json:"dur"`
			Pid  int            `json:"pid"`
			Tid  int            `json:"tid"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	timed, _ := counts(t, data)
	x := map[string]int{}
	args := 0
	type lane struct{ pid, tid int }
	ends := map[lane][]float64{}
	for _, e := range doc.TraceEvents {
		if e.Ph != "X" {
			continue
		}
		x[e.Name]++
		if len(e.Args) > 3 {
			args++
		}
		// Slices of one thread nest: each starts after the enclosing ones
		// have ended or ends within them.
		st := ends[lane{e.Pid, e.Tid}]
		for len(st) > 0 && st[len(st)-1] <= e.Ts {
			st = st[:len(st)-1]
		}
		if len(st) > 0 && e.Ts+e.Dur > st[len(st)-1]+0.001 {
			t.Fatalf("slice %s at %.3f+%.3f overlaps its enclosing slice ending %.3f", e.Name, e.Ts, e.Dur, st[len(st)-1])
		}
		ends[lane{e.Pid, e.Tid}] = append(st, e.Ts+e.Dur)
	}
	if args == 0 {
		t.Error("no slice has args")
	}
	if x["test.AllTypes"] != timed["test.AllTypes"] || timed["test.AllTypes"] == 0 {
		t.Errorf("test.AllTypes: %d X events, want %d", x["test.AllTypes"], timed["test.AllTypes"])
	}
}

// flowNode writes a recording of one node's flow events: ticks are ns,
// tick 0 is wall time wall.
type flowNode struct {
	t  *testing.T
	w  *jfr.Writer
	md *jfr.Metadata
}

func newFlowNode(t *testing.T, out io.Writer, wall int64) *flowNode {
	md, err := flow.FlowMetadata()
	if err != nil {
		t.Fatal(err)
	}
	w := jfr.NewWriter(out, &jfr.WriterOptions{StartNanos: wall, StartTicks: 0, TicksPerSecond: 1e9, Now: func() int64 { return 0 }})
	if err := w.SetMetadata(md); err != nil {
		t.Fatal(err)
	}
	return &flowNode{t: t, w: w, md: md}
}

func (n *flowNode) event(typ string, ticks int64, fields map[string]jfr.Value) {
	cl := n.md.ClassByName(typ)
	vals := make([]jfr.Value, len(cl.Fields))
	for i, f := range cl.Fields {
		switch v, ok := fields[f.Name]; {
		case f.Name == "startTime":
			vals[i] = jfr.IntValue(jfr.KindLong, ticks)
		case ok:
			vals[i] = v
		case f.Array:
			vals[i] = jfr.ArrayValue(f.Type)
		case f.Type.Name == "java.lang.String":
			vals[i] = jfr.Null()
		case f.Type.Name == "boolean":
			vals[i] = jfr.BoolValue(false)
		default:
			vals[i] = jfr.IntValue(jfr.KindLong, 0)
		}
	}
	if err := n.w.WriteEvent(cl, vals); err != nil {
		n.t.Fatal(err)
	}
}

func str(s string) jfr.Value { return jfr.StringValue(s) }

// TestFlowArrows: node A sends m1 to B, B answers m2. B's clock runs
// 50 ms ahead, so by raw time B receives m1 before A sent it; corrected,
// every arrow points forward in time.
func TestFlowArrows(t *testing.T) {
	const ms = 1e6
	base := int64(1_800_000_000) * 1e9
	var a, b bytes.Buffer
	na, nb := newFlowNode(t, &a, base), newFlowNode(t, &b, base+50*ms)
	span := func(n *flowNode, s int64) jfr.Value { return jfr.IntValue(jfr.KindLong, s) }
	na.event("flightrec.flow.Node", 0, map[string]jfr.Value{"name": str("A"), "number": jfr.IntValue(jfr.KindLong, 1)})
	na.event("flightrec.flow.SendStarted", 10*ms, map[string]jfr.Value{"span": span(na, 1), "thread": str("client"), "messageText": str("m1")})
	na.event("flightrec.flow.SendWritten", 11*ms, map[string]jfr.Value{"span": span(na, 1), "thread": str("client"), "messageText": str("m1")})
	na.event("flightrec.flow.Span", 11*ms, map[string]jfr.Value{"span": span(na, 1), "outgoingText": jfr.ArrayValue(na.md.ClassByName("java.lang.String"), str("m1"))})
	na.event("flightrec.flow.Received", 30*ms, map[string]jfr.Value{"span": span(na, 2), "thread": str("reader"), "messageText": str("m2")})
	na.event("flightrec.flow.HandleStart", 31*ms, map[string]jfr.Value{"span": span(na, 2), "thread": str("reader"), "messageText": str("m2")})
	na.event("flightrec.flow.HandleEnd", 32*ms, map[string]jfr.Value{"span": span(na, 2), "thread": str("reader"), "messageText": str("m2")})
	na.event("flightrec.flow.Span", 32*ms, map[string]jfr.Value{"span": span(na, 2), "incomingText": str("m2")})
	nb.event("flightrec.flow.Node", 0, map[string]jfr.Value{"name": str("B"), "number": jfr.IntValue(jfr.KindLong, 2)})
	nb.event("flightrec.flow.Received", 15*ms, map[string]jfr.Value{"span": span(nb, 1), "thread": str("reader"), "messageText": str("m1")})
	nb.event("flightrec.flow.HandleStart", 16*ms, map[string]jfr.Value{"span": span(nb, 1), "thread": str("worker"), "messageText": str("m1")})
	nb.event("flightrec.flow.SendStarted", 20*ms, map[string]jfr.Value{"span": span(nb, 1), "thread": str("worker"), "messageText": str("m2")})
	nb.event("flightrec.flow.HandleEnd", 21*ms, map[string]jfr.Value{"span": span(nb, 1), "thread": str("worker"), "messageText": str("m1")})
	nb.event("flightrec.flow.Span", 21*ms, map[string]jfr.Value{"span": span(nb, 1), "incomingText": str("m1"),
		"outgoingText": jfr.ArrayValue(nb.md.ClassByName("java.lang.String"), str("m2"))})
	for _, n := range []*flowNode{na, nb} {
		if err := n.w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	inputs := func() []Input {
		var ins []Input
		for i, data := range [][]byte{a.Bytes(), b.Bytes()} {
			name := []string{"A.jfr", "B.jfr"}[i]
			fin := flow.BytesInput(name, data)
			ins = append(ins, Input{Name: name, Reader: jfr.NewBytesReader(data, &jfr.ReaderOptions{PerChunkClock: true}), Flow: &fin})
		}
		return ins
	}
	d := decode(t, convert(t, inputs(), Proto))
	if len(d.flowOut) != 2 || len(d.flowIn) != 2 {
		t.Fatalf("flows out %v in %v, want the two messages", d.flowOut, d.flowIn)
	}
	for id, from := range d.flowOut {
		to, ok := d.flowIn[id]
		if !ok {
			t.Errorf("flow %d has no end", id)
		} else if to < from {
			t.Errorf("flow %d goes back in time: %d -> %d", id, from, to)
		}
	}
	if d.procs[procUUID(0)] != "A (A.jfr)" || d.procs[procUUID(1)] != "B (B.jfr)" {
		t.Errorf("processes %v", d.procs)
	}
	protocDecode(t, convert(t, inputs(), Proto))
	if d.annots["payload"] == 0 || d.annots["trace"] == 0 {
		t.Errorf("flow events without their annotations: %v", d.annots)
	}
	if d.instants["Incoming"] != 2 || d.instants["ODStarted"] != 2 {
		t.Errorf("instants %v", d.instants)
	}
	// The JSON variant has the same arrows, as s/f pairs.
	js := string(convert(t, inputs(), JSON))
	if s, f := strings.Count(js, `"ph":"s"`), strings.Count(js, `"ph":"f"`); s != 2 || f != 2 {
		t.Errorf("JSON has %d flow starts and %d ends, want 2 and 2", s, f)
	}
}

func TestLayoutLanes(t *testing.T) {
	tr := &track{items: []item{
		{start: 0, end: 10, name: "a"},
		{start: 2, end: 5, name: "nested"},
		{start: 5, end: 12, name: "overlaps a"},
		{start: 10, end: 11, name: "after a"},
		{start: 3, end: -1, name: "instant"},
	}}
	tr.layout()
	got := map[string]int{}
	for i, it := range tr.items {
		got[it.name] = tr.lanes[i]
	}
	want := map[string]int{"a": 0, "nested": 0, "overlaps a": 1, "after a": 0, "instant": 0}
	if fmt.Sprint(got) != fmt.Sprint(want) || tr.nLanes != 2 {
		t.Errorf("lanes %v (%d), want %v (2)", got, tr.nLanes, want)
	}
}

func TestTruncatedInput(t *testing.T) {
	data := testrec.Bytes(t, "jdk17-sample.jfr.gz")
	err := Write(io.Discard, []Input{{Name: "cut.jfr", Reader: jfr.NewBytesReader(data[:len(data)/3], nil)}}, Options{})
	var fe *jfr.FormatError
	if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), "cut.jfr: chunk 0, byte offset") {
		t.Errorf("err = %v", err)
	}
}

// TestClockCorrection: a node's own events move by its clock offset; the
// flow tracks, made on corrected time, and other nodes' events stay.
func TestClockCorrection(t *testing.T) {
	m := &model{byKey: map[string]int{}}
	a := m.track(0, "t", "t", true)
	b := m.track(1, "t", "t", true)
	f := m.track(1, "flow:t", "flow t", true)
	f.flow = true
	a.items = []item{{start: 100, end: 200}}
	b.items = []item{{start: 100, end: 200}, {start: 150, end: -1}}
	f.items = []item{{start: 100, end: -1}}
	c := m.counter(1, "x")
	c.points = []point{{t: 100, v: 1}}
	m.correct([]int64{0, 30})
	if a.items[0].start != 100 || b.items[0].start != 70 || b.items[0].end != 170 || b.items[1].start != 120 || b.items[1].end != -1 ||
		f.items[0].start != 100 || c.points[0].t != 70 {
		t.Errorf("after correction: a %v, b %v, flow %v, counter %v", a.items, b.items, f.items, c.points)
	}
}
