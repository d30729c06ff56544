package flow

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
	source // nil for a span log's replay (newReplayAhead)
	fill   batchSource
	log    *spanLog // pass 1: where the spans go with the keys noted
	full   chan *spanBatch
	empty  chan *spanBatch
	stop   chan struct{}
	done   chan struct{}
	cur    *spanBatch
	i      int
	ended  bool // Close was called
}

// spanBatch holds copies of consecutive spans. Their slices point into
// the batch's own arrays, which only grow by appending: a span copied
// earlier keeps the array it was copied into, so its bytes never move.
type spanBatch struct {
	spans  []rawSpan
	bytes  []byte
	events []rawEvent
	outs   [][]byte
	// The keys pass 1's merge noted for the spans (noteKeys), in order:
	// each span's spanKeys up to its end in keyEnds, its events' in msgs.
	logKeys []uint32
	keyEnds []int
	msgs    []int32
	// Or, replayed for pass 2, the spans and their keys and events.
	merged []mergeSpan
	keys   []uint32
	evs    []Event
	err    error // the source's error after the spans, nil if it goes on
}

const (
	readAheadSpans   = 256 // spans per batch
	readAheadBatches = 4   // batches per input: filled, being filled, in use
)

// newLoggingReadAhead reads src's spans ahead for pass 1, whose merge
// notes each span's keys (noteKeys) before it takes the next: the
// goroutine writes the spans of a batch to src's log when the batch
// comes back, so that the log's work stays off the merging goroutine.
func newLoggingReadAhead(src *loggingSource) *readAhead {
	return startReadAhead(src, src, src.log)
}

// newReplayAhead replays a span log ahead of pass 2's merge;
// nextMerged returns its spans.
func newReplayAhead(rs *replaySource) *readAhead { return startReadAhead(nil, rs, nil) }

func startReadAhead(src source, fill batchSource, log *spanLog) *readAhead {
	r := &readAhead{source: src, fill: fill, log: log, full: make(chan *spanBatch, readAheadBatches), empty: make(chan *spanBatch, readAheadBatches),
		stop: make(chan struct{}), done: make(chan struct{})}
	for range readAheadBatches {
		r.empty <- &spanBatch{}
	}
	go r.run()
	return r
}

func (r *readAhead) run() {
	defer close(r.done)
	for {
		var b *spanBatch
		select {
		case b = <-r.empty:
		case <-r.stop:
			return
		}
		r.logBatch(b)
		b.reset()
		for b.len() < readAheadSpans && b.err == nil {
			b.err = r.fill.nextInto(b)
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

// logBatch writes the spans of b whose keys were noted to the log, if
// r has one.
func (r *readAhead) logBatch(b *spanBatch) {
	if r.log == nil {
		return
	}
	k, e := 0, 0
	for i, end := range b.keyEnds {
		sp := &b.spans[i]
		r.log.add(sp, b.logKeys[k:end], b.msgs[e:e+len(sp.events)])
		k, e = end, e+len(sp.events)
	}
}

// noteKeys notes the keys (spanKeys) and the events' message keys
// (eventMsgs) of the span next returned last, for its span log.
func (r *readAhead) noteKeys(keys []uint32, msgs []int32) {
	b := r.cur
	b.logKeys = append(b.logKeys, keys...)
	b.keyEnds = append(b.keyEnds, len(b.logKeys))
	b.msgs = append(b.msgs, msgs...)
}

func (b *spanBatch) reset() {
	b.logKeys, b.keyEnds, b.msgs = b.logKeys[:0], b.keyEnds[:0], b.msgs[:0]
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

// nextMerged returns the next replayed span, valid until the next call,
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
				r.logRest()
				return r.cur.err
			}
			r.empty <- r.cur
		}
		r.cur, r.i = <-r.full, 0
	}
	return nil
}

// logRest writes what the goroutine, which has ended, left of the log:
// the batches given back after it took its last (in the order given
// back) and the last one.
func (r *readAhead) logRest() {
	if r.log == nil {
		return
	}
	<-r.done
	for {
		select {
		case b := <-r.empty:
			r.logBatch(b)
			b.reset()
		default:
			r.logBatch(r.cur)
			r.cur.keyEnds = r.cur.keyEnds[:0] // logged once, however often next is called
			return
		}
	}
}

// Close stops the goroutine, waits for it and closes the source.
func (r *readAhead) Close() error {
	if r.ended {
		return nil
	}
	r.ended = true
	close(r.stop)
	<-r.done
	if r.source == nil {
		return nil
	}
	return r.source.Close()
}

// mergeSpan is a span as pass 2 merges it, replayed from its span log
// on its input's read-ahead goroutine (replaySource), so that the merging
// goroutine only joins and releases: its message keys, its events as the
// traces hold them (a non-causal span's: only its retransmissions).
type mergeSpan struct {
	keys       []uint32 // spanKeys
	events     []Event
	endAt      int64 // the last event, corrected
	nevents    int   // events read, for the progress
	nonCausal  bool
	truncated  bool
	unfinished bool
}
