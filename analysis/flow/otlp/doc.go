// Package otlp exports merged message-flow traces as OpenTelemetry spans,
// so that Jaeger, Tempo or any OTLP backend holds them: one OTLP trace per
// flow trace, one span per node's handling of a message (a flow span),
// parented to the span that sent that message, in a resource whose
// service.name is the node's name.
//
// Convert builds the spans of one trace; an Exporter sends them in
// batches over OTLP/HTTP (protobuf, POST to <url>/v1/traces) or OTLP/gRPC
// (grpc://host:port).
//
// IDs are derived from the trace's content (its message IDs, its first
// span), so exporting the same recordings twice gives the same trace and
// span IDs: a backend merges them instead of holding two copies.
package otlp
