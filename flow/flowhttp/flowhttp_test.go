package flowhttp

import (
	"context"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	aflow "github.com/flightrec/flightrec/analysis/flow"
	"github.com/flightrec/flightrec/analysis/flow/otlp"
	"github.com/flightrec/flightrec/flow"
	"github.com/flightrec/flightrec/recorder"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// TestHandlerAndTransport records node A calling itself over HTTP (one
// node per recording: a process serving and calling as two nodes would
// need two recordings) through Transport and Handler, and a request from
// a client instrumented with OpenTelemetry (a traceparent, no flightrec
// ID). The merged traces link client and server spans; the OTLP export
// carries the W3C IDs, so the server span of the OTel request is a child
// of the OTel caller in its trace.
func TestHandlerAndTransport(t *testing.T) {
	node := flow.NewNode(1, "A")
	var seen []string // traceparent headers the server got
	srv := httptest.NewServer(Handler(node, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("traceparent"))
		if flow.FromContext(r.Context()) == nil {
			t.Error("no span in the handler's context")
		}
		if r.URL.Path == "/fail" {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		w.Write([]byte("ok"))
	})))
	defer srv.Close()
	client := &http.Client{Transport: &Transport{Node: node}}
	path := filepath.Join(t.TempDir(), "a.jfr")
	rec, err := recorder.Start(recorder.WithFile(path))
	if err != nil {
		t.Fatal(err)
	}
	node.Announce()
	s := node.Begin()
	s.TraceTag("checkout")
	req, _ := http.NewRequestWithContext(flow.NewContext(context.Background(), s), "GET", srv.URL+"/orders", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s.End()
	// An OpenTelemetry client: traceparent only.
	req, _ = http.NewRequest("GET", srv.URL+"/fail", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}

	var traces []*aflow.Trace
	if _, err := aflow.Merge([]aflow.Input{aflow.FileInput(path)}, nil, func(tr *aflow.Trace) error {
		traces = append(traces, tr)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(traces) != 2 {
		t.Fatalf("%d traces, want 2", len(traces))
	}
	byName := map[string]*tracepb.Span{}
	var otel *tracepb.Span // the span of the OpenTelemetry client's request; its number depends on the order the recording holds spans in
	for _, tr := range traces {
		for _, rs := range otlp.Convert(tr) {
			for _, sp := range rs.ScopeSpans[0].Spans {
				byName[sp.Name] = sp
				if strings.HasPrefix(sp.Name, "A span ") {
					otel = sp
				}
			}
		}
	}
	root, server := byName["checkout"], byName["handle 1:1"]
	if root == nil || server == nil || otel == nil {
		t.Fatalf("spans %v", byName)
	}
	// The client's span sent 1:1, the server's handled it.
	if string(server.ParentSpanId) != string(root.SpanId) || string(server.TraceId) != string(root.TraceId) {
		t.Errorf("server span %x in trace %x, want child of %x in %x", server.ParentSpanId, server.TraceId, root.SpanId, root.TraceId)
	}
	// The traceparent the client sent names its trace and span.
	want := "00-" + hex.EncodeToString(root.TraceId) + "-" + hex.EncodeToString(root.SpanId) + "-01"
	if len(seen) != 2 || seen[0] != want {
		t.Errorf("traceparent %q, want %q", seen, want)
	}
	if hex.EncodeToString(otel.TraceId) != "4bf92f3577b34da6a3ce929d0e0e4736" || hex.EncodeToString(otel.ParentSpanId) != "00f067aa0ba902b7" {
		t.Errorf("OTel request's span: trace %x parent %x", otel.TraceId, otel.ParentSpanId)
	}
	attrs := map[string]string{}
	for _, kv := range otel.Attributes {
		attrs[kv.Key] = kv.Value.GetStringValue()
	}
	if attrs["url.path"] != "/fail" || attrs["http.response.status_code"] != "500" || otel.Status.GetMessage() != "Internal Server Error" {
		t.Errorf("OTel request's span: %v, status %v", attrs, otel.Status)
	}
	for k := range attrs {
		if strings.HasPrefix(k, "w3c.") {
			t.Errorf("exported attribute %s", k)
		}
	}
}
