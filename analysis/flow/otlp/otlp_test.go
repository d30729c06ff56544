package otlp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/flightrec/flightrec/analysis/flow"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// received collects the spans a test receiver decoded.
type received struct {
	mu       sync.Mutex
	requests int
	spans    []*tracepb.Span
	service  map[string]string // span ID -> service.name of its resource
}

func (r *received) add(req *collectorpb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	for _, rs := range req.ResourceSpans {
		svc := ""
		for _, kv := range rs.Resource.GetAttributes() {
			if kv.Key == "service.name" {
				svc = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, s)
				r.service[string(s.SpanId)] = svc
			}
		}
	}
}

// export merges ex5 (a PUT chain A -> B -> C, and a GET on C alone) and
// exports it to endpoint.
func export(t *testing.T, endpoint string) *Exporter {
	t.Helper()
	var ins []flow.Input
	for _, n := range []string{"A", "B", "C"} {
		ins = append(ins, flow.FileInput(filepath.Join("../testdata/examples/ex5", n+".txt")))
	}
	e, err := NewExporter(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := flow.Merge(ins, nil, func(tr *flow.Trace) error { return e.Add(ctx, tr) }); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			if a := kv.Value.GetArrayValue(); a != nil {
				var b bytes.Buffer
				for i, v := range a.Values {
					if i > 0 {
						b.WriteByte(',')
					}
					b.WriteString(v.GetStringValue())
				}
				return b.String()
			}
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// check verifies the spans of ex5: the PUT trace is three spans in one
// OTLP trace, A's the root, B's its child and C's B's child, each in its
// node's service with its message, tags and goroutine; the GET trace is
// another trace of one span.
func check(t *testing.T, r *received) {
	t.Helper()
	if len(r.spans) != 4 {
		t.Fatalf("%d spans, want 4", len(r.spans))
	}
	by := make(map[string]*tracepb.Span)
	for _, s := range r.spans {
		by[r.service[string(s.SpanId)]+" "+s.Name] = s
	}
	root, b, c, get := by["A PUT"], by["B PutKeyValueCommand"], by["C PutKeyValueCommand"], by["C GET"]
	if root == nil || b == nil || c == nil || get == nil {
		t.Fatalf("spans by service and name: %v", by)
	}
	if len(root.ParentSpanId) != 0 || !bytes.Equal(b.ParentSpanId, root.SpanId) || !bytes.Equal(c.ParentSpanId, b.SpanId) {
		t.Errorf("parents: A %x, B %x (want %x), C %x (want %x)", root.ParentSpanId, b.ParentSpanId, root.SpanId, c.ParentSpanId, b.SpanId)
	}
	if !bytes.Equal(root.TraceId, b.TraceId) || !bytes.Equal(b.TraceId, c.TraceId) || bytes.Equal(get.TraceId, root.TraceId) || len(root.TraceId) != 16 {
		t.Errorf("trace IDs %x %x %x, GET %x", root.TraceId, b.TraceId, c.TraceId, get.TraceId)
	}
	if attr(b, AttrMessage) != "A|B|U0:8" || attr(b, AttrSent) != "B|C|U0:3" || attr(b, AttrTags) != "PutKeyValueCommand" ||
		attr(b, AttrNode) != "B" || attr(b, AttrGoroutine) != "UDP-rx" || b.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("B's span: %v", b)
	}
	// B: Incoming at 22:13:20.101, last event (TPComplete) at .1031.
	if b.StartTimeUnixNano != 1700000000101000000 || b.EndTimeUnixNano != 1700000000103100000 {
		t.Errorf("B's span from %d to %d", b.StartTimeUnixNano, b.EndTimeUnixNano)
	}
	if attr(root, AttrTraceTags) != "PUT" || len(b.Events) != 3 || b.Events[0].Name != "LOCK k1" {
		t.Errorf("A's tags %q, B's checkpoints %v", attr(root, AttrTraceTags), b.Events)
	}
}

// TestExportHTTP exports to an OTLP/HTTP receiver that decodes the
// protobuf requests.
func TestExportHTTP(t *testing.T) {
	r := &received{service: map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/otlp/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "bad request "+req.URL.Path, http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(req.Body)
		var msg collectorpb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.add(&msg)
		out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	defer srv.Close()
	e := export(t, srv.URL+"/otlp")
	if e.Traces != 2 || e.Spans != 4 || r.requests != 1 {
		t.Errorf("%d traces, %d spans sent in %d requests", e.Traces, e.Spans, r.requests)
	}
	check(t, r)
}

type grpcReceiver struct {
	collectorpb.UnimplementedTraceServiceServer
	r *received
}

func (g *grpcReceiver) Export(_ context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	g.r.add(req)
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

// TestExportGRPC exports to an OTLP/gRPC receiver.
func TestExportGRPC(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &received{service: map[string]string{}}
	s := grpc.NewServer()
	collectorpb.RegisterTraceServiceServer(s, &grpcReceiver{r: r})
	go s.Serve(l)
	defer s.Stop()
	export(t, "grpc://"+l.Addr().String())
	check(t, r)
}

// TestExportRejected: an HTTP error is reported.
func TestExportRejected(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "quota exceeded", http.StatusTooManyRequests)
	}))
	defer srv.Close()
	e, _ := NewExporter(srv.URL)
	var ins []flow.Input
	for _, n := range []string{"A", "B"} {
		ins = append(ins, flow.FileInput(filepath.Join("../testdata/examples/ex1", n+".txt")))
	}
	flow.Merge(ins, nil, func(tr *flow.Trace) error { return e.Add(context.Background(), tr) })
	if err := e.Close(context.Background()); err == nil || !bytes.Contains([]byte(err.Error()), []byte("429 Too Many Requests: quota exceeded")) {
		t.Errorf("err = %v", err)
	}
}

// TestNewExporterBadEndpoint: an endpoint without a scheme or a host says
// what is wanted; "127.0.0.1:4318" gave url.Parse's "first path segment
// in URL cannot contain colon", and "http://" was taken, to fail at the
// first post with "no Host in request URL".
func TestNewExporterBadEndpoint(t *testing.T) {
	for _, ep := range []string{"127.0.0.1:4318", "localhost:4318", "http://", "https:///v1", "grpc://", "ftp://x", ""} {
		want := fmt.Sprintf("otlp endpoint %q: want http://host:port[/path], https://host:port[/path] or grpc://host:port", ep)
		if e, err := NewExporter(ep); err == nil || err.Error() != want {
			t.Errorf("%q: exporter %v, error %v; want %s", ep, e, err, want)
		}
	}
}
