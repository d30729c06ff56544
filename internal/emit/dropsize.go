package emit

import (
	"time"
	"unsafe"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/clock"
	"github.com/flightrec/flightrec/internal/leb128"
)

// drop counts an event dropped for want of room: out of line, so that
// Record, which calls it, stays as small as it was.
//
//go:noinline
func drop(s *batch.Session, d *batch.Desc, p unsafe.Pointer, start, end int64, g, skey uint64, maxSize int) {
	s.Drop(droppedSize(d, p, start, end, g, skey, maxSize))
}

// droppedSize returns how many bytes the record of the event at p would
// have taken, for jdk.DataLoss's amount: only an event dropped for want of
// room pays for it. Strings count inline, as a buffer that had pooled one
// is not at hand.
func droppedSize(d *batch.Desc, p unsafe.Pointer, start, end int64, g, skey uint64, maxSize int) int {
	n := 1 // the size, one byte up to 127 (Record's rule)
	if maxSize > 127 {
		n = 4
	}
	n += leb128.Len(uint64(d.ID)) + leb128.Len(uint64(start)) + leb128.Len(g) + leb128.Len(skey)
	if d.Timed {
		n += leb128.Len(uint64(end - start))
	}
	for _, op := range d.Ops {
		q := unsafe.Add(p, op.Offset)
		switch op.Enc {
		case batch.EncVarint64, batch.EncFunc:
			n += leb128.Len(*(*uint64)(q))
		case batch.EncVarint32:
			n += leb128.Len(uint64(*(*uint32)(q)))
		case batch.EncVarint16:
			n += leb128.Len(uint64(*(*uint16)(q)))
		case batch.EncByte:
			n++
		case batch.EncFloat32:
			n += 4
		case batch.EncFloat64:
			n += 8
		case batch.EncString:
			n++
			if s := *(*string)(q); s != "" {
				n += leb128.Len(uint64(len(s))) + len(s)
			}
		case batch.EncTime:
			var ticks uint64
			if t := *(*time.Time)(q); !t.IsZero() {
				ticks = uint64(clock.TicksAt(t.UnixNano()))
			}
			n += leb128.Len(ticks)
		case batch.EncUnixNanos:
			var ticks uint64
			if ns := *(*int64)(q); ns != 0 {
				ticks = uint64(clock.TicksAt(ns))
			}
			n += leb128.Len(ticks)
		}
	}
	return n
}
