package perfetto

import (
	"bufio"
	"cmp"
	"io"
	"math"
	"slices"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of perfetto's protos/perfetto/trace (see
// testdata/trace_subset.proto).
const (
	traceFieldPacket = 1

	packetTimestamp       = 8
	packetSequenceID      = 10
	packetTrackEvent      = 11
	packetSequenceFlags   = 13
	packetTrackDescriptor = 60

	descUUID       = 1
	descName       = 2
	descProcess    = 3
	descThread     = 4
	descParentUUID = 5
	descCounter    = 8

	processPID  = 1
	processName = 6

	threadPID  = 1
	threadTID  = 2
	threadName = 5

	eventDebugAnnotations  = 4
	eventType              = 9
	eventTrackUUID         = 11
	eventName              = 23
	eventDoubleCounter     = 44
	eventFlowIDs           = 47
	eventTerminatingFlowID = 48

	annotationInt    = 4
	annotationDouble = 5
	annotationString = 6
	annotationName   = 10

	typeSliceBegin = 1
	typeSliceEnd   = 2
	typeInstant    = 3
	typeCounter    = 4

	seqIncrementalStateCleared = 1
	sequenceID                 = 1
)

// uuids of the tracks: processes, thread lanes, counters.
func procUUID(p int) uint64       { return uint64(p+1) << 48 }
func laneUUID(t, lane int) uint64 { return 1<<47 | uint64(t)<<12 | uint64(lane) }
func counterUUID(c int) uint64    { return 1<<46 | uint64(c) }
func pid(p int) uint64            { return uint64(p + 1) }
func appendMsg(b []byte, num protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}
func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}
func appendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// protoWriter writes packets as fields of a Trace message.
type protoWriter struct {
	w      *bufio.Writer
	pkt    []byte
	sub    []byte
	first  bool
	err    error
	header []byte
}

func (p *protoWriter) packet(body []byte) {
	p.header = appendMsg(p.header[:0], traceFieldPacket, body)
	_, p.err = p.w.Write(p.header)
}

// descriptor writes a TrackDescriptor packet.
func (p *protoWriter) descriptor(desc []byte) {
	pkt := appendVarint(p.pkt[:0], packetSequenceID, sequenceID)
	if p.first {
		pkt = appendVarint(pkt, packetSequenceFlags, seqIncrementalStateCleared)
		p.first = false
	}
	pkt = appendMsg(pkt, packetTrackDescriptor, desc)
	p.pkt = pkt
	p.packet(pkt)
}

func (m *model) writeProto(w io.Writer) error {
	p := &protoWriter{w: bufio.NewWriterSize(w, 1<<20), first: true}
	var d, sub []byte
	for i, name := range m.procs {
		sub = appendVarint(sub[:0], processPID, pid(i))
		sub = appendString(sub, processName, name)
		d = appendVarint(d[:0], descUUID, procUUID(i))
		d = appendMsg(d, descProcess, sub)
		p.descriptor(d)
	}
	for ti, t := range m.tracks {
		for l := range t.nLanes {
			d = appendVarint(d[:0], descUUID, laneUUID(ti, l))
			name := laneName(t.name, l)
			if t.tid != 0 && l == 0 {
				sub = appendVarint(sub[:0], threadPID, pid(t.proc))
				sub = appendVarint(sub, threadTID, uint64(t.tid))
				sub = appendString(sub, threadName, name)
				d = appendMsg(d, descThread, sub)
			} else {
				parent := procUUID(t.proc)
				if l > 0 {
					parent = laneUUID(ti, 0)
				}
				d = appendVarint(d, descParentUUID, parent)
				d = appendString(d, descName, name)
			}
			p.descriptor(d)
		}
	}
	for ci, c := range m.counters {
		d = appendVarint(d[:0], descUUID, counterUUID(ci))
		d = appendVarint(d, descParentUUID, procUUID(c.proc))
		d = appendString(d, descName, c.name)
		d = appendMsg(d, descCounter, nil)
		p.descriptor(d)
	}
	for _, e := range m.timeline() {
		p.pkt = appendVarint(p.pkt[:0], packetTimestamp, uint64(e.t))
		p.pkt = appendVarint(p.pkt, packetSequenceID, sequenceID)
		p.sub = m.appendEvent(p.sub[:0], e)
		p.pkt = appendMsg(p.pkt, packetTrackEvent, p.sub)
		p.packet(p.pkt)
		if p.err != nil {
			return p.err
		}
	}
	return p.w.Flush()
}

// laneName names lane l of a track: the track's name, then "name (2)"...
func laneName(name string, l int) string {
	if l == 0 {
		return name
	}
	return name + " (" + strconv.Itoa(l+1) + ")"
}

// entry is one timestamped TrackEvent: a slice's begin or end, an
// instant, or a counter value.
type entry struct {
	t     int64
	kind  uint8 // typeSliceBegin...
	track int   // track index, or counter index for counters
	item  int   // item index, or point index
}

// timeline returns every event in time order; at equal times ends come
// before begins, so back-to-back slices do not overlap.
func (m *model) timeline() []entry {
	var es []entry
	for ti, t := range m.tracks {
		for i, it := range t.items {
			if it.end < 0 {
				es = append(es, entry{it.start, typeInstant, ti, i})
				continue
			}
			es = append(es, entry{it.start, typeSliceBegin, ti, i}, entry{it.end, typeSliceEnd, ti, i})
		}
	}
	for ci, c := range m.counters {
		for i, pt := range c.points {
			es = append(es, entry{pt.t, typeCounter, ci, i})
		}
	}
	order := func(k uint8) int {
		if k == typeSliceEnd {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(es, func(a, b entry) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		if c := cmp.Compare(order(a.kind), order(b.kind)); c != 0 {
			return c
		}
		if a.kind == typeSliceEnd && b.kind == typeSliceEnd {
			return cmp.Compare(b.item, a.item) // inner slices end first
		}
		return 0
	})
	return es
}

func (m *model) appendEvent(b []byte, e entry) []byte {
	b = appendVarint(b, eventType, uint64(e.kind))
	if e.kind == typeCounter {
		c := m.counters[e.track]
		b = appendVarint(b, eventTrackUUID, counterUUID(e.track))
		b = protowire.AppendTag(b, eventDoubleCounter, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, math.Float64bits(c.points[e.item].v))
	}
	t := m.tracks[e.track]
	it := &t.items[e.item]
	b = appendVarint(b, eventTrackUUID, laneUUID(e.track, t.lanes[e.item]))
	if e.kind == typeSliceEnd {
		return b
	}
	b = appendString(b, eventName, it.name)
	b = append(b, m.args(it)...)
	l := m.linksOf(it, false)
	for _, id := range l.out {
		b = protowire.AppendTag(b, eventFlowIDs, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, id)
	}
	for _, id := range l.in {
		b = protowire.AppendTag(b, eventTerminatingFlowID, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, id)
	}
	return b
}

// appendProtoArg appends a TrackEvent.debug_annotations field.
func appendProtoArg(b []byte, x arg) []byte {
	var a [128]byte
	d := appendString(a[:0], annotationName, x.name)
	switch x.kind {
	case 'i':
		d = appendVarint(d, annotationInt, uint64(x.i))
	case 'f':
		d = protowire.AppendTag(d, annotationDouble, protowire.Fixed64Type)
		d = protowire.AppendFixed64(d, math.Float64bits(x.f))
	case 's':
		d = appendString(d, annotationString, x.s)
	}
	return appendMsg(b, eventDebugAnnotations, d)
}
