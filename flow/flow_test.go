package flow

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/analysis/flow"
	"github.com/flightrec/flightrec/analysis/flow/otlp"
	"github.com/flightrec/flightrec/internal/flowspec"
	"github.com/flightrec/flightrec/recorder"
)

func record(t *testing.T, path string, fn func()) {
	t.Helper()
	rec, err := recorder.Start(recorder.WithFile(path))
	if err != nil {
		t.Fatal(err)
	}
	fn()
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
}

// TestRoundTrip records a request on node A and its handling on node B,
// through a hand-off to a worker goroutine, plus a retransmission and a
// discarded message, and merges the two recordings with analysis/flow.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	a, b := NewNode(1, "A"), NewNode(2, "B")
	req, lost := a.NextID(), a.NextID()
	record(t, filepath.Join(dir, "a.jfr"), func() {
		a.Announce()
		s := a.Begin()
		s.TraceTag("GET")
		s.SendStarted(req)
		s.SendWritten(req)
		s.SendStarted(lost)
		s.SendWritten(lost)
		s.End()
		nc := a.BeginNonCausal()
		nc.NonCausalSend(req)
		nc.End()
	})
	record(t, filepath.Join(dir, "b.jfr"), func() {
		b.Announce()
		p := b.Received()
		s := p.Message(req)
		d := p.Message(lost)
		d.Discard()
		d.End()
		tok := s.Handoff()
		s.End()
		done := make(chan struct{})
		go func() {
			defer close(done)
			w := tok.Take()
			w.HandleStart()
			w.MessageTag("Get")
			w.Checkpoint("cache hit")
			w.HandleEnd()
			tok.Complete()
		}()
		<-done
	})
	var traces []string
	m, err := flow.Merge([]flow.Input{flow.FileInput(filepath.Join(dir, "a.jfr")), flow.FileInput(filepath.Join(dir, "b.jfr"))}, nil,
		func(tr *flow.Trace) error {
			var sb strings.Builder
			for i := range tr.Events {
				e := &tr.Events[i]
				sb.WriteString(tr.NodeName(e) + " " + flowspec.LogName[e.Kind])
				if e.Msg >= 0 {
					sb.WriteString(" " + tr.MessageID(e.Msg))
				}
				if e.Text != "" {
					sb.WriteString(" " + e.Text)
				}
				sb.WriteString("\n")
			}
			traces = append(traces, sb.String())
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if m.Warnings != 0 || len(m.Errors) != 0 || !reflect.DeepEqual(m.Nodes, []string{"A", "B"}) {
		t.Errorf("warnings %d, errors %v, nodes %v", m.Warnings, m.Errors, m.Nodes)
	}
	want := []string{`A FlowTag GET
A ODStarted 1:1
A ODFinished 1:1
A ODStarted 1:2
A ODFinished 1:2
A Retransmission 1:1
B Incoming 1:1
B THStarted
B THSuccess
B Handling 1:1
B MsgTag Get
B Checkpoint cache hit
B MsgProcEnd 1:1
B TPComplete
B Incoming 1:2
B Discard 1:2
`}
	if len(traces) != 1 {
		t.Fatalf("%d traces:\n%s", len(traces), strings.Join(traces, "\n"))
	}
	got := sortLines(traces[0])
	if got != sortLines(want[0]) {
		t.Errorf("trace:\n%s\nwant (any order):\n%s", traces[0], want[0])
	}
}

func sortLines(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	for i := range l {
		for j := i + 1; j < len(l); j++ {
			if l[j] < l[i] {
				l[i], l[j] = l[j], l[i]
			}
		}
	}
	return strings.Join(l, "\n")
}

func TestDisabledNoAllocs(t *testing.T) {
	n := NewNode(3, "C")
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		s := n.Received().Message(7)
		tok := s.Handoff()
		w := tok.Take()
		w.HandleStart()
		w.SendStarted(9)
		w.Checkpoint("x")
		w.HandleEnd()
		tok.Complete()
		s.End()
		_ = FromContext(ctx)
	})
	if allocs != 0 {
		t.Errorf("%v allocs with no recording", allocs)
	}
}

func TestFrameAndHeaders(t *testing.T) {
	var buf bytes.Buffer
	id := MakeID(5, 1<<40+3)
	if err := WriteFrame(&buf, id, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	got, payload, err := ReadFrame(&buf, nil)
	if err != nil || got != id || string(payload) != "hello" {
		t.Fatalf("ReadFrame: %v %q %v", got, payload, err)
	}
	if id.String() != "5:1099511627779" {
		t.Errorf("String %s", id)
	}
	h := http.Header{}
	SetHeader(h, id)
	if g, txt := HeaderID(h); g != id || txt != "" {
		t.Errorf("HeaderID %v %q", g, txt)
	}
	md := map[string]string{MetadataKey: "node7|U:42"}
	if g, txt := MetadataID(md); g != 0 || txt != "node7|U:42" {
		t.Errorf("MetadataID %v %q", g, txt)
	}
	SetMetadata(md, id)
	if g, _ := MetadataID(md); g != id {
		t.Errorf("MetadataID %v", g)
	}
}

// TestSchema checks every flowspec field but the span record's arrays
// against the JFR metadata of the recorded types.
func TestSchema(t *testing.T) {
	fields := map[string]map[string]bool{}
	for _, ty := range []any{nodeEvent{}, msgEvent{}, tokenEvent{}, plainEvent{}, textEvent{}, spanEvent{}, attrEvent{}} {
		rt := reflect.TypeOf(ty)
		m := map[string]bool{}
		for i := 1; i < rt.NumField(); i++ {
			m[rt.Field(i).Tag.Get("jfr")] = true
		}
		fields[rt.Name()] = m
	}
	for _, e := range flowspec.Events {
		var got map[string]bool
		switch {
		case e.Name == flowspec.NodeEvent:
			got = fields["nodeEvent"]
		case e.Name == flowspec.SpanEvent:
			got = fields["spanEvent"]
		case e.Kind == flowspec.Attribute:
			got = fields["attrEvent"]
		case tokTypes[e.Kind] != nil:
			got = fields["tokenEvent"]
		case textTypes[e.Kind] != nil:
			got = fields["textEvent"]
		case msgTypes[e.Kind] != nil:
			got = fields["msgEvent"]
		default:
			got = fields["plainEvent"]
		}
		for _, f := range e.Fields {
			if f.Kind == flowspec.LongArray || f.Kind == flowspec.StringArray {
				continue
			}
			if !got[f.Name] {
				t.Errorf("%s: no field %s", e.Name, f.Name)
			}
		}
		if len(got) > len(e.Fields) {
			t.Errorf("%s: extra fields %v", e.Name, got)
		}
	}
}

// TestUnfinishedSpanKept: a hand-off never completed when the recording
// stops leaves B's span open; its events are kept in the trace, marked
// unfinished, instead of vanishing as malformed.
func TestUnfinishedSpanKept(t *testing.T) {
	dir := t.TempDir()
	a, b := NewNode(1, "A"), NewNode(2, "B")
	req := a.NextID()
	record(t, filepath.Join(dir, "a.jfr"), func() {
		a.Announce()
		s := a.Begin()
		s.SendStarted(req)
		s.End()
	})
	record(t, filepath.Join(dir, "b.jfr"), func() {
		b.Announce()
		s := b.Received().Message(req)
		s.HandleStart()
		s.Handoff() // never taken: the span stays open
		s.End()
	})
	var traces []*flow.Trace
	m, err := flow.Merge([]flow.Input{flow.FileInput(filepath.Join(dir, "a.jfr")), flow.FileInput(filepath.Join(dir, "b.jfr"))}, nil,
		func(tr *flow.Trace) error { traces = append(traces, tr); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(traces) != 1 || m.Warnings != 0 || m.UnfinishedSpans != 1 {
		t.Fatalf("%d traces, %d warnings, %d unfinished spans; want 1, 0, 1", len(traces), m.Warnings, m.UnfinishedSpans)
	}
	tr := traces[0]
	var got []string
	for i := range tr.Events {
		e := &tr.Events[i]
		got = append(got, fmt.Sprintf("%s %s %v", tr.NodeName(e), flowspec.LogName[e.Kind], e.Unfinished))
	}
	want := []string{"A ODStarted false", "B Incoming true", "B Handling true", "B THStarted true"}
	if !reflect.DeepEqual(got, want) || tr.UnfinishedSpans != 1 {
		t.Errorf("events %q, %d unfinished spans; want %q, 1", got, tr.UnfinishedSpans, want)
	}
}

// TestTwoNodesInOneRecording: two nodes announced in one process cannot
// be told apart in its recording (their spans share numbers); the merge
// refuses it, naming the file and both nodes.
func TestTwoNodesInOneRecording(t *testing.T) {
	dir := t.TempDir()
	a, b := NewNode(1, "A"), NewNode(2, "B")
	path := filepath.Join(dir, "ab.jfr")
	record(t, path, func() {
		a.Announce()
		b.Announce()
		id := a.NextID()
		s := a.Begin()
		s.SendStarted(id)
		s.End()
		r := b.Received().Message(id)
		r.HandleStart()
		r.End()
	})
	_, err := flow.Merge([]flow.Input{flow.FileInput(path)}, nil, func(*flow.Trace) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "ab.jfr: holds two flow nodes (A, number 1 and B, number 2)") {
		t.Errorf("err = %v, want ab.jfr refused as two nodes", err)
	}
}

// TestAttributesAndError: SetAttr and SetError are recorded, show in the
// merged trace's spans and go to OTLP as attributes and an error status.
func TestAttributesAndError(t *testing.T) {
	dir := t.TempDir()
	a, b := NewNode(1, "A"), NewNode(2, "B")
	req := a.NextID()
	record(t, filepath.Join(dir, "a.jfr"), func() {
		a.Announce()
		s := a.Begin()
		s.SetAttr("http.route", "/orders")
		s.SendStarted(req)
		s.End()
	})
	record(t, filepath.Join(dir, "b.jfr"), func() {
		b.Announce()
		s := b.Received().Message(req)
		s.HandleStart()
		s.SetAttr("sku", "42")
		s.SetError("out of stock")
		s.End()
	})
	var traces []*flow.Trace
	_, err := flow.Merge([]flow.Input{flow.FileInput(filepath.Join(dir, "a.jfr")), flow.FileInput(filepath.Join(dir, "b.jfr"))}, nil,
		func(tr *flow.Trace) error { traces = append(traces, tr); return nil })
	if err != nil || len(traces) != 1 {
		t.Fatalf("%d traces, %v", len(traces), err)
	}
	spans := traces[0].Spans()
	if len(spans) != 2 || !reflect.DeepEqual(spans[0].Attrs, [][2]string{{"http.route", "/orders"}}) ||
		!reflect.DeepEqual(spans[1].Attrs, [][2]string{{"sku", "42"}}) || spans[1].Error != "out of stock" || spans[1].Parent != 0 {
		t.Fatalf("spans %+v", spans)
	}
	var log bytes.Buffer
	flow.WriteTrace(&log, traces[0])
	if !strings.Contains(log.String(), "|Attribute sku=42\n") || !strings.Contains(log.String(), "|Error out of stock\n") {
		t.Errorf("trace log:\n%s", log.String())
	}
	rs := otlp.Convert(traces[0])
	bSpan := rs[1].ScopeSpans[0].Spans[0]
	found := false
	for _, kv := range bSpan.Attributes {
		found = found || (kv.Key == "sku" && kv.Value.GetStringValue() == "42")
	}
	if !found || bSpan.Status.GetMessage() != "out of stock" || bSpan.Status.GetCode() != 2 {
		t.Errorf("exported span %v", bSpan)
	}
}
