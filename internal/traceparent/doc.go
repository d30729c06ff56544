// Package traceparent reads and writes the W3C Trace Context traceparent
// header (https://www.w3.org/TR/trace-context/), which flow/flowhttp and
// flow/flowgrpc carry so that flightrec spans join traces begun by
// OpenTelemetry-instrumented services.
package traceparent
