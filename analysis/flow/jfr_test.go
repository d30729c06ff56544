package flow

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/internal/flowspec"
	"github.com/flightrec/flightrec/jfr"
)

// flowWriter writes flow events to a recording, the way the recorder's
// emit API is meant to: events carry their span's number, and a span record
// closes the span after its events.
type flowWriter struct {
	t  testing.TB
	w  *jfr.Writer
	md *jfr.Metadata
}

func newFlowWriter(t testing.TB, out io.Writer, originNano, originWallNs int64) *flowWriter {
	md, err := FlowMetadata()
	if err != nil {
		t.Fatal(err)
	}
	// Ticks are the node's nanoTime: tick originNano is wall originWallNs.
	w := jfr.NewWriter(out, &jfr.WriterOptions{StartNanos: originWallNs, StartTicks: originNano, TicksPerSecond: 1e9,
		Now: func() int64 { return originNano }})
	if err := w.SetMetadata(md); err != nil {
		t.Fatal(err)
	}
	return &flowWriter{t: t, w: w, md: md}
}

// write writes one event of the named type; fields maps field names to
// values, the rest are null or zero.
func (fw *flowWriter) write(name string, ticks int64, fields map[string]jfr.Value) {
	cl := fw.md.ClassByName(name)
	if cl == nil {
		fw.t.Fatalf("no event type %s", name)
		return
	}
	vals := make([]jfr.Value, len(cl.Fields))
	for i, f := range cl.Fields {
		switch {
		case f.Name == "startTime":
			vals[i] = jfr.IntValue(jfr.KindLong, ticks)
		case fields[f.Name].Kind() != jfr.KindInvalid:
			vals[i] = fields[f.Name]
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
	if err := fw.w.WriteEvent(cl, vals); err != nil {
		fw.t.Fatal(err)
	}
}

func (fw *flowWriter) close() {
	if err := fw.w.Close(); err != nil {
		fw.t.Fatal(err)
	}
}

var typeOfKind = func() map[flowspec.Kind]string {
	m := make(map[flowspec.Kind]string)
	for _, e := range flowspec.Events {
		if e.Kind != flowspec.Invalid {
			m[e.Kind] = e.Name
		}
	}
	return m
}()

// idValues returns the message fields of an ID: "n:c" as a compact ID,
// anything else as text.
func idValues(id string, num, text string, f map[string]jfr.Value) {
	var n, c uint64
	if i := strings.IndexByte(id, ':'); i > 0 && !strings.ContainsAny(id, "|") {
		if nn, ok := parseInt([]byte(id[:i])); ok {
			if cc, ok := parseInt([]byte(id[i+1:])); ok {
				n, c = uint64(nn), uint64(cc)
				f[num] = jfr.IntValue(jfr.KindLong, flowspec.MessageID(uint16(n), c))
				return
			}
		}
	}
	f[text] = jfr.StringValue(id)
}

// spanLogToJFR rewrites a text span log as a flow recording of node name.
func spanLogToJFR(t testing.TB, name string, log []byte) []byte {
	return spanLogToJFRChunks(t, name, log, 0)
}

// spanLogToJFRChunks is spanLogToJFR starting a new chunk every
// spansPerChunk spans (0: one chunk).
func spanLogToJFRChunks(t testing.TB, name string, log []byte, spansPerChunk int) []byte {
	src, err := openSource(BytesInput(name+".txt", log), "")
	if err != nil {
		t.Fatal(err)
	}
	ts := src.(*textSource)
	var out bytes.Buffer
	fw := newFlowWriter(t, &out, ts.originNano, ts.originWall)
	// The span logs do not say the node's number: -1 is unknown.
	fw.write(flowspec.NodeEvent, ts.originNano, map[string]jfr.Value{flowspec.FieldNodeName: jfr.StringValue(name),
		flowspec.FieldNodeNumber: jfr.IntValue(jfr.KindLong, -1)})
	var sp rawSpan
	span := int64(0)
	for {
		err := src.next(&sp)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		span++
		if spansPerChunk > 0 && span > 1 && (span-1)%int64(spansPerChunk) == 0 && len(sp.events) > 0 {
			if err := fw.w.StartChunk(sp.events[0].nano); err != nil {
				t.Fatal(err)
			}
		}
		for _, e := range sp.events {
			f := map[string]jfr.Value{
				flowspec.FieldSpan:   jfr.IntValue(jfr.KindLong, span),
				flowspec.FieldThread: jfr.StringValue(src.threads()[e.thread]),
			}
			if e.msg != nil {
				idValues(string(e.msg), flowspec.FieldMessage, flowspec.FieldMessageText, f)
			}
			if e.text != nil {
				f[flowspec.FieldText] = jfr.StringValue(string(e.text))
			}
			fw.write(typeOfKind[e.kind], e.nano, f)
		}
		f := map[string]jfr.Value{
			flowspec.FieldSpan:      jfr.IntValue(jfr.KindLong, span),
			flowspec.FieldNonCausal: jfr.BoolValue(sp.nonCausal),
		}
		if sp.in != nil {
			idValues(string(sp.in), flowspec.FieldIncoming, flowspec.FieldIncomingText, f)
		}
		var nums, texts []jfr.Value
		for _, o := range sp.out {
			g := map[string]jfr.Value{}
			idValues(string(o), "n", "t", g)
			if v, ok := g["n"]; ok {
				nums = append(nums, v)
			} else {
				texts = append(texts, g["t"])
			}
		}
		cl := fw.md.ClassByName(flowspec.SpanEvent)
		for _, fd := range cl.Fields {
			switch fd.Name {
			case flowspec.FieldOutgoing:
				f[fd.Name] = jfr.ArrayValue(fd.Type, nums...)
			case flowspec.FieldOutgoingText:
				f[fd.Name] = jfr.ArrayValue(fd.Type, texts...)
			}
		}
		last := int64(0)
		if n := len(sp.events); n > 0 {
			last = sp.events[n-1].nano
		}
		fw.write(flowspec.SpanEvent, last, f)
	}
	fw.close()
	return out.Bytes()
}

// TestJFRInput writes the examples as flow recordings (recording file
// names that are not the node names, so the node name must come from the
// recording) and checks that they merge to what the span logs merge to.
func TestJFRInput(t *testing.T) {
	for _, ex := range []string{"ex1", "ex2", "ex5", "edge_loopback", "edge_nc_dup"} {
		t.Run(ex, func(t *testing.T) {
			textIns := exampleInputs(t, ex)
			var jfrIns []Input
			for i, in := range textIns {
				data, err := os.ReadFile(in.Name)
				if err != nil {
					t.Fatal(err)
				}
				rec := spanLogToJFR(t, nodeNameOf(in.Name), data)
				jfrIns = append(jfrIns, BytesInput("node"+string(rune('0'+i))+".jfr", rec))
			}
			want := mergeInputs(t, textIns)
			got := mergeInputs(t, jfrIns)
			diffText(t, "trace log", got.traces, want.traces)
			diffText(t, "stats", got.stats, want.stats)
		})
	}
}

// TestJFRCompactIDs: compact (node, counter) IDs written as longs read as
// "node:counter" and pair across recordings.
func TestJFRCompactIDs(t *testing.T) {
	a := spanLogToJFR(t, "A", []byte("0=1700000000000\nSPAN;null;1:7\nE;1000;main;ODStarted;1:7\n"))
	b := spanLogToJFR(t, "B", []byte("0=1700000000000\nSPAN;1:7\nE;5000;rx;Incoming\nE;6000;rx;Handling;1:7\n"))
	r := mergeInputs(t, []Input{BytesInput("a.jfr", a), BytesInput("b.jfr", b)})
	if !strings.Contains(r.traces, "A\t-> B:\t1:7\n") || len(r.list) != 1 {
		t.Errorf("compact IDs did not pair:\n%s", r.traces)
	}
}

// TestFlowSchema checks the spec table against the metadata it builds.
func TestFlowSchema(t *testing.T) {
	md, err := FlowMetadata()
	if err != nil {
		t.Fatal(err)
	}
	kinds := make(map[flowspec.Kind]bool)
	for _, e := range flowspec.Events {
		cl := md.ClassByName(e.Name)
		if cl == nil {
			t.Fatalf("%s not in the metadata", e.Name)
		}
		if len(cl.Fields) != 1+len(e.Fields) || cl.Fields[0].Name != "startTime" {
			t.Errorf("%s: fields %d, want startTime + %d", e.Name, len(cl.Fields), len(e.Fields))
		}
		if e.Kind != flowspec.Invalid {
			if kinds[e.Kind] {
				t.Errorf("kind %d twice", e.Kind)
			}
			kinds[e.Kind] = true
			if flowspec.KindOfLogName(flowspec.LogName[e.Kind]) != e.Kind && e.Kind != flowspec.NonCausalSend {
				t.Errorf("%s: log name %q does not map back", e.Name, flowspec.LogName[e.Kind])
			}
		}
	}
	if len(kinds) != int(flowspec.NumKinds)-1 {
		t.Errorf("%d kinds have an event type, want %d", len(kinds), flowspec.NumKinds-1)
	}
	if n, c := flowspec.SplitMessageID(flowspec.MessageID(3, 1<<40+5)); n != 3 || c != 1<<40+5 {
		t.Errorf("SplitMessageID = %d, %d", n, c)
	}
}
