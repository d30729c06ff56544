package flowhttp

import (
	"context"
	"net/http"
	"strconv"

	"github.com/flightrec/flightrec/flow"
	"github.com/flightrec/flightrec/internal/flowspec"
	"github.com/flightrec/flightrec/internal/traceparent"
)

// Span attributes recorded for W3C Trace Context: 32 and 16 hex digits;
// the parent is the caller's span when it was not a flightrec node.
const (
	AttrTraceID  = flowspec.AttrW3CTraceID
	AttrSpanID   = flowspec.AttrW3CSpanID
	AttrParentID = flowspec.AttrW3CParentID
)

type ctxKey struct{}

// newSpanContext returns a new span in the trace of ctx (or a new trace)
// and records its IDs on s.
func newSpanContext(ctx context.Context, s *flow.Span) traceparent.Context {
	tc := traceparent.New()
	if parent, ok := ctx.Value(ctxKey{}).(traceparent.Context); ok {
		tc = parent.Child()
	}
	s.SetAttr(AttrTraceID, tc.Trace())
	s.SetAttr(AttrSpanID, tc.Span())
	return tc
}

// statusWriter keeps the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Handler returns next recorded as node n: each request is received and
// handled in a span (flow.FromContext gives it to next), with the
// request's method, path and status as attributes and an error for a 5xx
// status. A request without a flightrec message ID (from a client that
// is not a flightrec node) starts a span of its own; its traceparent, if
// any, makes the span a child of the caller's span in the W3C trace.
func Handler(n *flow.Node, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, text := flow.HeaderID(r.Header)
		var s *flow.Span
		switch {
		case id != 0:
			s = n.Received().Message(id)
		case text != "":
			s = n.Received().MessageText(text)
		default:
			s = n.Begin()
		}
		if s == nil {
			next.ServeHTTP(w, r)
			return
		}
		ctx := r.Context()
		if parent, ok := traceparent.Parse(r.Header.Get("traceparent")); ok {
			ctx = context.WithValue(ctx, ctxKey{}, parent)
			if id == 0 && text == "" {
				s.SetAttr(AttrParentID, parent.Span())
			}
		}
		tc := newSpanContext(ctx, s)
		ctx = flow.NewContext(context.WithValue(ctx, ctxKey{}, tc), s)
		s.SetAttr("http.request.method", r.Method)
		s.SetAttr("url.path", r.URL.Path)
		s.HandleStart()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if sw.status == 0 {
				sw.status = http.StatusOK
			}
			s.SetAttr("http.response.status_code", strconv.Itoa(sw.status))
			if sw.status >= 500 {
				s.SetError(http.StatusText(sw.status))
			}
			s.HandleEnd()
			s.End()
		}()
		next.ServeHTTP(sw, r.WithContext(ctx))
	})
}

// Transport records the requests it sends as messages of Node, from the
// span of the request's context (flow.FromContext; a request outside any
// span gets a span of its own), and adds the Flightrec-Message-Id and
// traceparent headers.
type Transport struct {
	Node *flow.Node
	Base http.RoundTripper // nil: http.DefaultTransport
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	ctx := req.Context()
	s := flow.FromContext(ctx)
	own := s == nil
	if own {
		s = t.Node.Begin()
	}
	id := t.Node.NextID()
	req = req.Clone(ctx)
	flow.SetHeader(req.Header, id)
	tc, ok := ctx.Value(ctxKey{}).(traceparent.Context)
	if own && s != nil || !ok {
		tc = newSpanContext(ctx, s)
	}
	req.Header.Set("traceparent", tc.String())
	s.SendStarted(id)
	resp, err := base.RoundTrip(req)
	s.SendWritten(id)
	if err != nil {
		s.SetError(err.Error())
	}
	if own {
		s.End()
	}
	return resp, err
}
