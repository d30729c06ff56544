package jfr

import (
	"testing"
)

// TestWriterFlushpoints writes one chunk in four segments (constants only
// in the first) and reads what is written after each flushpoint, with the
// header Header returns in place: every event so far, with references into
// the first segment's checkpoint resolved.
func TestWriterFlushpoints(t *testing.T) {
	md, events, buf, w := allKindsWriter(t, 0)
	allKinds := class(t, md, "go.AllKinds")
	const segments = 4
	for i := range segments {
		if i == 0 {
			writeAllKinds(t, w, events)
		} else {
			for _, fs := range events {
				must(t, w.WriteEvent(allKinds, fs))
			}
		}
		end := int64(testStartTicks + (i+1)*1000)
		if i < segments-1 {
			must(t, w.Flushpoint(end))
		} else {
			must(t, w.EndChunk(end))
		}
		data := append([]byte(nil), buf.Bytes()...)
		copy(data, w.Header())
		h := header(t, data, 0)
		if h.Size != int64(len(data)) || h.State != 0 || h.ConstantPoolOffset == 0 || h.MetadataOffset == 0 {
			t.Fatalf("segment %d: header %+v, %d bytes written", i, h, len(data))
		}
		if got, want := h.DurationNanos, int64((i+1)*1000); got != want {
			t.Errorf("segment %d: duration %d ns, want %d", i, got, want)
		}
		n, resolved := 0, 0
		chunks := readEvents(t, data, func(ev *Event) {
			if ev.Type.Name != "go.AllKinds" {
				return
			}
			n++
			if v, ok := ev.Field("endpoint"); ok && v.Key() != 0 {
				if v.Resolve().IsNull() {
					t.Errorf("segment %d: endpoint %d does not resolve", i, v.Key())
				}
				resolved++
			}
		})
		if chunks != 1 || n != (i+1)*len(events) || resolved == 0 {
			t.Fatalf("segment %d: %d chunks, %d events (%d references resolved), want 1 and %d", i, chunks, n, resolved, (i+1)*len(events))
		}
	}
}
