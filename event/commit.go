package event

import (
	"time"
	"unsafe"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/emit"
)

// commit records the event whose header is h and marks it committed: the
// generic form of the Commit methods flightrec gen writes, which call
// Record and the Writer's methods the same way with the fields written
// out. It is kept out of line so the handle methods inline; h does not
// escape.
//
//go:noinline
func commit(h *emit.Header) {
	d := h.D
	p := unsafe.Pointer(h)
	extra := 0
	for _, off := range d.Strings {
		extra += len(*(*string)(unsafe.Add(p, off)))
	}
	w, ok := emit.Record(h, extra)
	if !ok {
		return
	}
	// The encoding switch is written out here rather than called: a call
	// cost 2 ns.
	for _, op := range d.Ops {
		q := unsafe.Add(p, op.Offset)
		switch op.Enc {
		case batch.EncVarint64:
			w = w.Varint(*(*uint64)(q))
		case batch.EncVarint32:
			w = w.Varint(uint64(*(*uint32)(q)))
		case batch.EncString:
			str := *(*string)(q)
			if k := w.CachedKey(str); k != 0 {
				w = w.Ref(k)
			} else {
				w = w.String(str)
			}
		case batch.EncByte:
			w = w.Byte(*(*uint8)(q))
		case batch.EncVarint16:
			w = w.Varint(uint64(*(*uint16)(q)))
		case batch.EncFloat32:
			w = w.Float32(*(*float32)(q))
		case batch.EncFloat64:
			w = w.Float64(*(*float64)(q))
		case batch.EncTime:
			w = w.Time(*(*time.Time)(q))
		case batch.EncUnixNanos:
			w = w.UnixNanos(*(*int64)(q))
		case batch.EncFunc:
			w = w.Varint(uint64(*(*uintptr)(q)))
		}
	}
	w.End()
	w.Unpin()
}
