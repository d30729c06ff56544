package flowgrpc

import (
	"context"
	"encoding/hex"
	"errors"
	"google.golang.org/grpc/stats"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	aflow "github.com/flightrec/flightrec/analysis/flow"
	"github.com/flightrec/flightrec/analysis/flow/otlp"
	"github.com/flightrec/flightrec/flow"
	"github.com/flightrec/flightrec/recorder"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// service is a gRPC service to call: the OTLP trace service, failing on
// an empty request.
type service struct {
	collectorpb.UnimplementedTraceServiceServer
	seen []string // traceparent metadata
}

func (s *service) Export(ctx context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.seen = append(s.seen, md.Get("traceparent")...)
	if flow.FromContext(ctx) == nil {
		return nil, errors.New("no span in the method's context")
	}
	if len(req.ResourceSpans) == 0 {
		return nil, errors.New("empty export")
	}
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

// TestStatsHandlers records node A calling itself over gRPC through the
// client and server stats handlers (one node per recording), then a call
// from a client that only sends a traceparent, which fails: the spans
// link client to server, and the export carries the W3C IDs.
func TestStatsHandlers(t *testing.T) {
	node := flow.NewNode(1, "A")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	svc := &service{}
	ends := make(chan struct{}, 2)
	srv := grpc.NewServer(grpc.StatsHandler(endSignal{NewServerHandler(node), ends}))
	collectorpb.RegisterTraceServiceServer(srv, svc)
	go srv.Serve(l)
	defer srv.Stop()
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithStatsHandler(NewClientHandler(node)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	plain, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()

	path := filepath.Join(t.TempDir(), "a.jfr")
	rec, err := recorder.Start(recorder.WithFile(path))
	if err != nil {
		t.Fatal(err)
	}
	node.Announce()
	s := node.Begin()
	s.TraceTag("checkout")
	_, err = collectorpb.NewTraceServiceClient(conn).Export(flow.NewContext(context.Background(), s),
		&collectorpb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{}}})
	s.End()
	if err != nil {
		t.Fatal(err)
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if _, err := collectorpb.NewTraceServiceClient(plain).Export(ctx, &collectorpb.ExportTraceServiceRequest{}); err == nil {
		t.Fatal("the empty export did not fail")
	}
	// A client may see the reply before the server's handler ends the
	// span: wait for both, or the second is recorded unfinished.
	for range 2 {
		select {
		case <-ends:
		case <-time.After(10 * time.Second):
			t.Fatal("the server's stats handler did not see both RPCs end")
		}
	}
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}

	spans := map[string]*tracepb.Span{}
	var other *tracepb.Span // the plain client's call; its number depends on the order the recording holds spans in
	if _, err := aflow.Merge([]aflow.Input{aflow.FileInput(path)}, nil, func(tr *aflow.Trace) error {
		for _, rs := range otlp.Convert(tr) {
			for _, sp := range rs.ScopeSpans[0].Spans {
				spans[sp.Name] = sp
				if strings.HasPrefix(sp.Name, "A span ") {
					other = sp
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	root, server := spans["checkout"], spans["handle 1:1"]
	if root == nil || server == nil || other == nil {
		t.Fatalf("spans %v", spans)
	}
	if string(server.ParentSpanId) != string(root.SpanId) || string(server.TraceId) != string(root.TraceId) {
		t.Errorf("server span %x in %x, want a child of %x in %x", server.ParentSpanId, server.TraceId, root.SpanId, root.TraceId)
	}
	if want := "00-" + hex.EncodeToString(root.TraceId) + "-" + hex.EncodeToString(root.SpanId) + "-01"; len(svc.seen) != 2 || svc.seen[0] != want {
		t.Errorf("traceparent %q, want %q first", svc.seen, want)
	}
	if hex.EncodeToString(other.TraceId) != "4bf92f3577b34da6a3ce929d0e0e4736" || hex.EncodeToString(other.ParentSpanId) != "00f067aa0ba902b7" ||
		other.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("the plain client's call: %v", other)
	}
}

// endSignal passes every call to h and then, for an RPC's end, sends on
// ends.
type endSignal struct {
	stats.Handler
	ends chan<- struct{}
}

func (e endSignal) HandleRPC(ctx context.Context, st stats.RPCStats) {
	e.Handler.HandleRPC(ctx, st)
	if _, ok := st.(*stats.End); ok {
		e.ends <- struct{}{}
	}
}
