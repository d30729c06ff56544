package traceparent

import "testing"

func TestParse(t *testing.T) {
	const good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	c, ok := Parse(" " + good + " ")
	if !ok || c.Trace() != "4bf92f3577b34da6a3ce929d0e0e4736" || c.Span() != "00f067aa0ba902b7" || c.String() != good {
		t.Fatalf("Parse(%q) = %v %v", good, c, ok)
	}
	if _, ok := Parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later"); !ok {
		t.Error("a later version with an extra field was refused")
	}
	for _, bad := range []string{
		"",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",      // no flags
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", // version 00 has four fields
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // version ff
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",   // zero trace
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   // zero span
		"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",    // short trace
		"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",   // not hex
		"0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // short version
	} {
		if c, ok := Parse(bad); ok {
			t.Errorf("Parse(%q) = %v, want refused", bad, c)
		}
	}
}

func TestChild(t *testing.T) {
	a := New()
	b := a.Child()
	if a.TraceID != b.TraceID || a.SpanID == b.SpanID || a.TraceID == [16]byte{} {
		t.Errorf("New %v, Child %v: want one trace, two spans", a, b)
	}
}
