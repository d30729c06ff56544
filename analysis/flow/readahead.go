package flow

import (
	"errors"

	"github.com/flightrec/flightrec/internal/flowspec"
)

// readAhead reads a source on a goroutine of its own, a few batches of
// spans ahead of the merge, so that decoding the inputs (most of a
// merge's work) runs on every core instead of on the merge's one.
//
// Its next returns the spans in the source's order with the source's
// final error; a span's slices stay valid until the next call, as the
// source interface says. The other methods are the source's, called by
// the merge only once next has returned an error: the goroutine has then
// handed over its last batch and no longer touches the source.
type readAhead struct {
	source
	conv  *spanConverter // pass 2: the spans go converted, as mergeSpans
	full  chan *spanBatch
	empty chan *spanBatch
	stop  chan struct{}
	done  chan struct{}
	cur   *spanBatch
	i     int
	ended bool // Close was called
}

// spanBatch holds copies of consecutive spans. Their slices point into
// the batch's own arrays, which only grow by appending: a span copied
// earlier keeps the array it was copied into, so its bytes never move.
type spanBatch struct {
	spans  []rawSpan
	bytes  []byte
	events []rawEvent
	outs   [][]byte
	// Or, converted for pass 2, the spans and their keys and events.
	merged []mergeSpan
	keys   []uint32
	evs    []Event
	err    error // the source's error after the spans, nil if it goes on
}

const (
	readAheadSpans   = 256 // spans per batch
	readAheadBatches = 4   // batches per input: filled, being filled, in use
)

func newReadAhead(src source) *readAhead { return newConvertingReadAhead(src, nil) }

// newConvertingReadAhead returns a readAhead whose spans conv converts
// (nil for none); nextMerged returns them.
func newConvertingReadAhead(src source, conv *spanConverter) *readAhead {
	r := &readAhead{source: src, conv: conv, full: make(chan *spanBatch, readAheadBatches), empty: make(chan *spanBatch, readAheadBatches),
		stop: make(chan struct{}), done: make(chan struct{})}
	for range readAheadBatches {
		r.empty <- &spanBatch{}
	}
	go r.run()
	return r
}

func (r *readAhead) run() {
	defer close(r.done)
	// fill appends the next span to b: copied from the source's rawSpan
	// (converted in pass 2), or by a batchSource itself.
	var sp rawSpan
	fill := func(b *spanBatch) error {
		if err := r.source.next(&sp); err != nil {
			return err
		}
		if r.conv != nil {
			return r.conv.add(b, &sp)
		}
		b.add(&sp)
		return nil
	}
	if bs, ok := r.source.(batchSource); ok && r.conv == nil {
		fill = bs.nextInto
	}
	for {
		var b *spanBatch
		select {
		case b = <-r.empty:
		case <-r.stop:
			return
		}
		b.reset()
		for b.len() < readAheadSpans && b.err == nil {
			b.err = fill(b)
		}
		select {
		case r.full <- b:
		case <-r.stop:
			return
		}
		if b.err != nil {
			return
		}
	}
}

// batchSource is a source that appends its spans to a batch itself
// (nextInto: the next span, or the source's error with nothing appended),
// its bytes, events and outgoing IDs in the batch's arrays, instead of
// filling a rawSpan that add copies.
type batchSource interface {
	nextInto(b *spanBatch) error
}

func (b *spanBatch) reset() {
	b.spans, b.bytes, b.events, b.outs, b.err = b.spans[:0], b.bytes[:0], b.events[:0], b.outs[:0], nil
	b.merged, b.keys = b.merged[:0], b.keys[:0]
	clear(b.evs) // their texts
	b.evs = b.evs[:0]
}

// len returns the spans in the batch.
func (b *spanBatch) len() int { return len(b.spans) + len(b.merged) }

// keep copies p into the batch's bytes; nil stays nil.
func (b *spanBatch) keep(p []byte) []byte {
	if p == nil {
		return nil
	}
	start := len(b.bytes)
	b.bytes = append(b.bytes, p...)
	return b.bytes[start:len(b.bytes):len(b.bytes)]
}

func (b *spanBatch) add(sp *rawSpan) {
	c := *sp
	c.in = b.keep(sp.in)
	start := len(b.outs)
	for _, o := range sp.out {
		b.outs = append(b.outs, b.keep(o))
	}
	c.out = b.outs[start:len(b.outs):len(b.outs)]
	start = len(b.events)
	for _, e := range sp.events {
		e.msg, e.text = b.keep(e.msg), b.keep(e.text)
		b.events = append(b.events, e)
	}
	c.events = b.events[start:len(b.events):len(b.events)]
	b.spans = append(b.spans, c)
}

func (r *readAhead) next(sp *rawSpan) error {
	if err := r.ready(); err != nil {
		return err
	}
	*sp = r.cur.spans[r.i]
	r.i++
	return nil
}

// nextMerged returns the next converted span, valid until the next call,
// or the source's final error.
func (r *readAhead) nextMerged() (*mergeSpan, error) {
	if err := r.ready(); err != nil {
		return nil, err
	}
	r.i++
	return &r.cur.merged[r.i-1], nil
}

// ready makes r.cur a batch with a span at r.i, or returns the source's
// final error.
func (r *readAhead) ready() error {
	for r.cur == nil || r.i == r.cur.len() {
		if r.cur != nil {
			if r.cur.err != nil {
				return r.cur.err
			}
			r.empty <- r.cur
		}
		r.cur, r.i = <-r.full, 0
	}
	return nil
}

// Close stops the goroutine, waits for it and closes the source.
func (r *readAhead) Close() error {
	if r.ended {
		return nil
	}
	r.ended = true
	close(r.stop)
	<-r.done
	return r.source.Close()
}

// mergeSpan is a span as pass 2 merges it, converted on its input's
// read-ahead goroutine (spanConverter), so that the merging goroutine
// only joins and releases: its message keys, its events as the traces
// hold them (a non-causal span's: only its retransmissions).
type mergeSpan struct {
	keys       []uint32 // spanKeys
	events     []Event
	endAt      int64 // the last event, corrected
	nevents    int   // events read, for the progress
	nonCausal  bool
	truncated  bool
	unfinished bool
}

// spanConverter converts an input's spans for pass 2. The merge reads
// from many converters at once what they share: the ID table, which only
// pass 1 adds to, and the clock model.
type spanConverter struct {
	m       *Merger
	node    uint16
	span    uint32 // spans converted: the next one's number
	clockAt int    // the clock model's estimate used last (correctFrom)
	texts   map[string]string
	keys    []uint32                       // spanKeys' scratch
	ids     spanIDs                        // the span's IDs' keys, found by the table's Lookup
	key     func(id []byte) (uint32, bool) // ids.key, made once
}

var errNotInterned = errors.New("internal error: a message ID of pass 2 was not interned in pass 1")

// add converts sp into b.
func (c *spanConverter) add(b *spanBatch, sp *rawSpan) error {
	c.span++
	ms := mergeSpan{nonCausal: sp.nonCausal, truncated: sp.truncated, unfinished: sp.unfinished, nevents: len(sp.events)}
	ms.endAt = c.m.correctFrom(c.node, sp.lastWall, &c.clockAt)
	c.ids.reset()
	keys, ok := spanKeys(sp, c.keys[:0], c.key)
	if !ok {
		return errNotInterned
	}
	c.keys = keys
	start := len(b.keys)
	b.keys = append(b.keys, keys...)
	ms.keys = b.keys[start:len(b.keys):len(b.keys)]
	start = len(b.evs)
	// The reference tool shows the bytes read as the message the span
	// handled (not one it discarded).
	var inKey int32 = -1
	if sp.in != nil && !sp.nonCausal {
		for j := range sp.events {
			if e := &sp.events[j]; e.kind == flowspec.HandleStart && string(e.msg) == string(sp.in) {
				inKey = int32(ms.keys[0])
				break
			}
		}
	}
	for j := range sp.events {
		e := &sp.events[j]
		if sp.nonCausal && (e.kind != flowspec.NonCausalSend || e.msg == nil) {
			continue
		}
		k := int32(-1)
		if e.msg != nil {
			kk, ok := c.key(e.msg)
			if !ok {
				return errNotInterned
			}
			k = int32(kk)
		} else if e.kind == flowspec.Received {
			k = inKey
		}
		b.evs = append(b.evs, c.event(sp, e, k, uint32(j)))
	}
	ms.events = b.evs[start:len(b.evs):len(b.evs)]
	b.merged = append(b.merged, ms)
	return nil
}

// event converts a raw event of the span.
func (c *spanConverter) event(sp *rawSpan, e *rawEvent, msg int32, seq uint32) Event {
	ev := Event{
		Nano: e.nano, Wall: c.m.correctFrom(c.node, e.wall, &c.clockAt), RawWall: e.wall,
		Msg: msg, Thread: e.thread, Span: c.span, Ordinal: sp.ordinal, Seq: seq,
		Node: c.node, Kind: e.kind, Unfinished: sp.unfinished,
	}
	if len(e.text) > 0 {
		s, ok := c.texts[string(e.text)]
		if !ok {
			s = string(e.text)
			if len(c.texts) < maxTexts {
				c.texts[s] = s
			}
		}
		ev.Text = s
	}
	return ev
}
