package traceparent

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// Context is a span's W3C identity: its trace and its own span ID.
type Context struct {
	TraceID [16]byte
	SpanID  [8]byte
}

// Parse reads a traceparent header: version-format-span-flags, all lower
// hex. It refuses version ff, IDs of the wrong length, and the all-zero
// IDs the specification calls invalid; a later version may append fields.
func Parse(h string) (c Context, ok bool) {
	parts := strings.Split(strings.TrimSpace(h), "-")
	if len(parts) < 4 || len(parts[0]) != 2 || parts[0] == "ff" || len(parts[1]) != 32 || len(parts[2]) != 16 || len(parts[3]) != 2 {
		return Context{}, false
	}
	if parts[0] == "00" && len(parts) != 4 {
		return Context{}, false
	}
	if _, err := hex.Decode(c.TraceID[:], []byte(parts[1])); err != nil {
		return Context{}, false
	}
	if _, err := hex.Decode(c.SpanID[:], []byte(parts[2])); err != nil {
		return Context{}, false
	}
	if c.TraceID == [16]byte{} || c.SpanID == [8]byte{} {
		return Context{}, false
	}
	return c, true
}

// New returns a span of a new trace.
func New() Context {
	var c Context
	rand.Read(c.TraceID[:])
	return c.Child()
}

// Child returns a new span in c's trace.
func (c Context) Child() Context {
	rand.Read(c.SpanID[:])
	return c
}

// Trace is the trace ID in hex, as span attributes record it.
func (c Context) Trace() string { return hex.EncodeToString(c.TraceID[:]) }

// Span is the span ID in hex.
func (c Context) Span() string { return hex.EncodeToString(c.SpanID[:]) }

// String is the version-00 header naming c as the parent, sampled.
func (c Context) String() string { return "00-" + c.Trace() + "-" + c.Span() + "-01" }
