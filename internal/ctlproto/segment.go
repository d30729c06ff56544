package ctlproto

import (
	"encoding/binary"
	"fmt"

	"github.com/flightrec/flightrec/jfr"
)

// Segment is the body of a KindSegment frame: what a flush added to a
// chunk of the service's recording, with only the records the stream
// sends (the metadata, the checkpoints and the events of the types asked
// for), each part at its offset in the chunk. The client keeps the chunk
// from segment to segment and reads it with jfr.LiveChunk.
//
// Encoded: the chunk's number (8 bytes, big-endian; a new number begins a
// chunk), the chunk's size up to the flush (8), its header as of the
// flush (jfr.HeaderSize bytes), then each part: its offset (8), its
// length (4) and its bytes.
type Segment struct {
	Chunk  uint64
	Size   int64
	Header []byte
	Parts  []Part
}

// Part is records of a chunk, end to end, from its byte Offset.
type Part struct {
	Offset int64
	Data   []byte
}

const segmentFixed = 16 + jfr.HeaderSize

// MaxStreamChunk bounds the size of a streamed chunk, which the client
// holds whole (the events not sent are holes in it).
const MaxStreamChunk = 1 << 30

// AppendSegmentHead appends the start of a segment's body to dst: the
// parts follow, each appended by AppendPart.
func AppendSegmentHead(dst []byte, chunk uint64, size int64, header []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, chunk)
	dst = binary.BigEndian.AppendUint64(dst, uint64(size))
	return append(dst, header[:jfr.HeaderSize]...)
}

// AppendPart appends a part of a segment's body to dst.
func AppendPart(dst []byte, off int64, data []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(off))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(data)))
	return append(dst, data...)
}

// ParseSegment decodes a segment's body, whose bytes it refers to, into
// seg (its Parts reused). It checks that the parts lie in order after the
// chunk header and within Size; an error names the byte offset in body.
func ParseSegment(body []byte, seg *Segment) error {
	if len(body) < segmentFixed {
		return fmt.Errorf("segment of %d bytes, shorter than its %d-byte head", len(body), segmentFixed)
	}
	seg.Chunk = binary.BigEndian.Uint64(body)
	size := binary.BigEndian.Uint64(body[8:])
	if size < jfr.HeaderSize || size > MaxStreamChunk {
		return fmt.Errorf("segment, byte offset 8: chunk size %d, want %d to %d", size, jfr.HeaderSize, MaxStreamChunk)
	}
	seg.Size = int64(size)
	seg.Header = body[16:segmentFixed]
	seg.Parts = seg.Parts[:0]
	end := int64(jfr.HeaderSize) // of the last part
	for pos := segmentFixed; pos < len(body); {
		if len(body)-pos < 12 {
			return fmt.Errorf("segment, byte offset %d: part head of %d of 12 bytes", pos, len(body)-pos)
		}
		off := binary.BigEndian.Uint64(body[pos:])
		n := int(binary.BigEndian.Uint32(body[pos+8:]))
		if off < uint64(end) || off > size || uint64(n) > size-off {
			return fmt.Errorf("segment, byte offset %d: part of %d bytes at chunk offset %d, outside %d..%d", pos, n, off, end, size)
		}
		if n > len(body)-pos-12 {
			return fmt.Errorf("segment, byte offset %d: part of %d bytes, %d in the frame", pos, n, len(body)-pos-12)
		}
		seg.Parts = append(seg.Parts, Part{Offset: int64(off), Data: body[pos+12 : pos+12+n]})
		end = int64(off) + int64(n)
		pos += 12 + n
	}
	return nil
}
