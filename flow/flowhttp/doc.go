// Package flowhttp records the message flow of net/http services in one
// line each: Handler wraps a server's handler, Transport a client's
// RoundTripper.
//
// Each request is a message: the client's span sends it (a new message ID
// in the Flightrec-Message-Id header) and the server handles it in a span
// of its own, which `flightrec flow` joins into one trace. Both also speak
// W3C Trace Context: the server accepts a traceparent header and the
// client sends one, and the spans record their W3C trace and span IDs
// (attributes w3c.trace_id, w3c.span_id, w3c.parent_id), which the OTLP
// export uses, so flightrec traces join the traces of services
// instrumented with OpenTelemetry.
package flowhttp
