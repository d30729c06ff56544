package otlp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/flightrec/flightrec/analysis/flow"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

// batchSpans is how many spans one export request carries at most
// (before the trace that crosses it).
const batchSpans = 2048

// Exporter sends traces to an OTLP endpoint. It is not safe for
// concurrent use.
type Exporter struct {
	httpURL string // POST target, for OTLP/HTTP
	client  *http.Client
	conn    *grpc.ClientConn // for OTLP/gRPC
	grpc    collectorpb.TraceServiceClient

	pending []*tracepb.ResourceSpans
	spans   int
	// Traces and Spans count what was sent.
	Traces, Spans int
}

// NewExporter returns an exporter to endpoint: http://host:port[/path]
// (or https) for OTLP/HTTP, which POSTs protobuf to <path>/v1/traces, or
// grpc://host:port for OTLP/gRPC (without TLS).
func NewExporter(endpoint string) (*Exporter, error) {
	// url.Parse's own complaint about "127.0.0.1:4318" ("first path
	// segment in URL cannot contain colon") does not say what is wanted.
	u, err := url.Parse(endpoint)
	if err != nil {
		u = &url.URL{}
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			break
		}
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
		return &Exporter{httpURL: u.String(), client: &http.Client{Timeout: 30 * time.Second}}, nil
	case "grpc":
		if u.Host == "" {
			break
		}
		conn, err := grpc.NewClient(u.Host, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, fmt.Errorf("otlp endpoint %q: %w", endpoint, err)
		}
		return &Exporter{conn: conn, grpc: collectorpb.NewTraceServiceClient(conn)}, nil
	}
	return nil, fmt.Errorf("otlp endpoint %q: want http://host:port[/path], https://host:port[/path] or grpc://host:port", endpoint)
}

// Add queues the spans of t, sending a batch when enough are queued.
func (e *Exporter) Add(ctx context.Context, t *flow.Trace) error {
	for _, rs := range Convert(t) {
		e.pending = append(e.pending, rs)
		e.spans += len(rs.ScopeSpans[0].Spans)
	}
	e.Traces++
	if e.spans >= batchSpans {
		return e.Flush(ctx)
	}
	return nil
}

// Flush sends the queued spans.
func (e *Exporter) Flush(ctx context.Context) error {
	if len(e.pending) == 0 {
		return nil
	}
	req := &collectorpb.ExportTraceServiceRequest{ResourceSpans: e.pending}
	n := e.spans
	e.pending, e.spans = nil, 0
	var partial *collectorpb.ExportTracePartialSuccess
	if e.grpc != nil {
		resp, err := e.grpc.Export(ctx, req)
		if err != nil {
			return fmt.Errorf("otlp export: %w", err)
		}
		partial = resp.GetPartialSuccess()
	} else {
		body, err := proto.Marshal(req)
		if err != nil {
			return err
		}
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, e.httpURL, bytes.NewReader(body))
		if err != nil {
			return err
		}
		hr.Header.Set("Content-Type", "application/x-protobuf")
		resp, err := e.client.Do(hr)
		if err != nil {
			return fmt.Errorf("otlp export: %w", err)
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("otlp export to %s: %s: %s", e.httpURL, resp.Status, bytes.TrimSpace(data))
		}
		var out collectorpb.ExportTraceServiceResponse
		if proto.Unmarshal(data, &out) == nil {
			partial = out.GetPartialSuccess()
		}
	}
	if r := partial.GetRejectedSpans(); r > 0 {
		return fmt.Errorf("otlp export: the backend rejected %d of %d spans: %s", r, n, partial.GetErrorMessage())
	}
	e.Spans += n
	return nil
}

// Close sends what is queued and releases the connection.
func (e *Exporter) Close(ctx context.Context) error {
	err := e.Flush(ctx)
	if e.conn != nil {
		if cerr := e.conn.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
