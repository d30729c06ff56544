package flowgrpc

import (
	"context"

	"github.com/flightrec/flightrec/flow"
	"github.com/flightrec/flightrec/internal/flowspec"
	"github.com/flightrec/flightrec/internal/traceparent"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

type rpcKey struct{}

// rpc is the state of one RPC between the handler's calls.
type rpc struct {
	span *flow.Span
	own  bool // the handler began the span and ends it
	id   flow.ID
	tc   traceparent.Context
}

type serverHandler struct{ n *flow.Node }

// NewServerHandler returns the stats handler of a server that is node n:
// every RPC is received and handled in a span (flow.FromContext in the
// method gives it), with the method as an attribute and an error for a
// failed status.
func NewServerHandler(n *flow.Node) stats.Handler { return serverHandler{n} }

func (h serverHandler) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	md, _ := metadata.FromIncomingContext(ctx)
	get := func(k string) string {
		if v := md.Get(k); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	id, text := flow.MetadataID(map[string]string{flow.MetadataKey: get(flow.MetadataKey)})
	var s *flow.Span
	switch {
	case id != 0:
		s = h.n.Received().Message(id)
	case text != "":
		s = h.n.Received().MessageText(text)
	default:
		s = h.n.Begin()
	}
	if s == nil {
		return ctx
	}
	r := &rpc{span: s, own: true, tc: traceparent.New()}
	if parent, ok := traceparent.Parse(get("traceparent")); ok {
		r.tc = parent.Child()
		if id == 0 && text == "" {
			s.SetAttr(flowspec.AttrW3CParentID, parent.Span())
		}
	}
	s.SetAttr(flowspec.AttrW3CTraceID, r.tc.Trace())
	s.SetAttr(flowspec.AttrW3CSpanID, r.tc.Span())
	s.SetAttr("rpc.method", info.FullMethodName)
	s.HandleStart()
	return flow.NewContext(context.WithValue(ctx, rpcKey{}, r), s)
}

func (h serverHandler) HandleRPC(ctx context.Context, st stats.RPCStats) {
	end, ok := st.(*stats.End)
	r, _ := ctx.Value(rpcKey{}).(*rpc)
	if !ok || r == nil {
		return
	}
	if end.Error != nil {
		r.span.SetAttr("rpc.grpc.status_code", status.Code(end.Error).String())
		r.span.SetError(end.Error.Error())
	}
	r.span.HandleEnd()
	r.span.End()
}

func (serverHandler) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (serverHandler) HandleConn(context.Context, stats.ConnStats)                       {}

type clientHandler struct{ n *flow.Node }

// NewClientHandler returns the stats handler of a client that is node n:
// every RPC is a message sent from the span of its context (a span of its
// own outside any), with its ID and a traceparent in the metadata.
func NewClientHandler(n *flow.Node) stats.Handler { return clientHandler{n} }

func (h clientHandler) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	s := flow.FromContext(ctx)
	r := &rpc{span: s, id: h.n.NextID()}
	if s == nil {
		r.span, r.own = h.n.Begin(), true
		s = r.span
	}
	// The caller's W3C identity, when a flowgrpc server span holds it.
	if parent, ok := ctx.Value(rpcKey{}).(*rpc); ok && parent.span == s {
		r.tc = parent.tc
	} else {
		r.tc = traceparent.New()
		s.SetAttr(flowspec.AttrW3CTraceID, r.tc.Trace())
		s.SetAttr(flowspec.AttrW3CSpanID, r.tc.Span())
	}
	s.SendStarted(r.id)
	ctx = metadata.AppendToOutgoingContext(ctx, flow.MetadataKey, r.id.String(), "traceparent", r.tc.String())
	return context.WithValue(ctx, rpcKey{}, r)
}

func (h clientHandler) HandleRPC(ctx context.Context, st stats.RPCStats) {
	r, _ := ctx.Value(rpcKey{}).(*rpc)
	if r == nil {
		return
	}
	switch st := st.(type) {
	case *stats.OutHeader:
		r.span.SendWritten(r.id)
	case *stats.End:
		if st.Error != nil {
			r.span.SetError(st.Error.Error())
		}
		if r.own {
			r.span.End()
		}
	}
}

func (clientHandler) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (clientHandler) HandleConn(context.Context, stats.ConnStats)                       {}
