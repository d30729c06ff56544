package jfr

import (
	"encoding/binary"

	"github.com/flightrec/flightrec/internal/leb128"
)

// A writer that keeps a file readable while it grows (the recorder's file
// sink) extends the file only with reservation pages: ReservePage-sized,
// page-aligned chunks that are complete and empty on their own. Linux cuts
// a write short on SIGKILL only at page boundaries (at folio boundaries,
// which are multiples of the page size), so a kill at any moment leaves a
// file of whole chunks. Each page is:
//
//	chunk header (68 bytes), the empty record {2, 1}
//	metadata record: no classes, id ReserveMetadataID
//	checkpoint record: no pools, delta 0
//	filler record (FillerType) to the end of the page
//
// Read as records of the chunk before it, once that chunk's header is
// extended over the page, the header is a record of 70 bytes ('F') and
// type 76 ('L') that readers skip, as a streamed chunk's is, and what
// follows are records readers skip too: a metadata, a checkpoint and a
// filler. So a page is valid both after a chunk and inside one.
//
// 4096 bytes divide every page size Linux uses (4, 16 and 64 KiB), so
// pages aligned to 4096 in the file are whole at every tear.

// ReservePage is the size and alignment of reservation pages.
const ReservePage = 4096

// ReserveMetadataID is the metadata id of reservation pages, which no
// writer's own metadata reaches, so that readers told a page from real
// chunks and parse its metadata once for a run of pages.
const ReserveMetadataID = 1<<62 + 'R'

// AppendReservation appends n reservation pages stamped with clock c
// (their start; their duration is 0).
func AppendReservation(dst []byte, c Clock, n int) []byte {
	if n <= 0 {
		return dst
	}
	start := len(dst)
	dst = AppendReserved(dst, c, ReservePage)
	page := dst[start:]
	for range n - 1 {
		dst = append(dst, page...)
	}
	return dst
}

// ReservedMinSize is the smallest chunk AppendReserved makes.
const ReservedMinSize = 256

// AppendReserved appends one chunk laid out as a reservation page, of size
// bytes (at least ReservedMinSize): a writer shrinking its file puts one
// after the chunk it shrinks, so that the file ends with a chunk until it
// is truncated.
func AppendReserved(dst []byte, c Clock, size int) []byte {
	at := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	dst = append(dst, streamPad[:]...)
	ticks := uint64(c.StartTicks)

	md := leb128.AppendUvarint(nil, uint64(ticks))
	md = leb128.AppendUvarint(md, 0)
	md = leb128.AppendUvarint(md, ReserveMetadataID)
	md = appendElements(md, rootElement(&mdElement{name: "metadata"}, nil))
	dst = AppendRecord(dst, 0, md)

	cpOff := len(dst) - at
	cp := leb128.AppendUvarint(nil, uint64(ticks))
	cp = append(cp, 0, 0, 0, 0) // duration, delta, type mask, pools
	dst = AppendRecord(dst, 1, cp)

	fill := size - (len(dst) - at)
	var fh [FillerHeaderSize]byte
	PutFillerHeader(fh[:], int64(fill))
	dst = append(dst, fh[:]...)
	dst = append(dst, make([]byte, fill-FillerHeaderSize)...)

	h := Header{Major: 2, Minor: 1, Size: int64(size), ConstantPoolOffset: int64(cpOff), MetadataOffset: streamMetadataOffset,
		StartNanos: c.StartNanos, StartTicks: c.StartTicks, TicksPerSecond: c.TicksPerSecond,
		Flags: FlagCompressedInts | FlagFinalChunk}
	h.put(dst[at:])
	return dst
}

// FillerHeaderSize is the size of the header PutFillerHeader writes.
const FillerHeaderSize = 6

// PutFillerHeader writes the header of a FillerType record of n bytes (n >=
// FillerHeaderSize, n < 1<<28): its size as a 5-byte varint whose last byte is
// 0, then the type, so that bytes 4 and 5 are 0, 2, a chunk header's
// major version (the recorder writes a new chunk over such a header).
func PutFillerHeader(b []byte, n int64) {
	b[0] = byte(n) | 0x80
	b[1] = byte(n>>7) | 0x80
	b[2] = byte(n>>14) | 0x80
	b[3] = byte(n>>21) | 0x80
	b[4] = 0
	b[5] = FillerType
}

// IsReservation tells whether b starts with a reservation page or another
// chunk of AppendReserved (given at least its first 100 bytes).
func IsReservation(b []byte) bool {
	if len(b) < int(streamMetadataOffset)+10 || [4]byte(b[:4]) != Magic {
		return false
	}
	if binary.BigEndian.Uint64(b[24:]) != uint64(streamMetadataOffset) {
		return false
	}
	d := decoder{b: b[streamMetadataOffset:]}
	d.uvarint() // size
	typ := d.uvarint()
	d.uvarint() // start
	d.uvarint() // duration
	id := d.uvarint()
	return d.err == nil && typ == 0 && id == ReserveMetadataID
}
