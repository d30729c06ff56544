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
	source
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
	err    error // the source's error after the spans, nil if it goes on
}

const (
	readAheadSpans   = 256 // spans per batch
	readAheadBatches = 4   // batches per input: filled, being filled, in use
)

func newReadAhead(src source) *readAhead {
	r := &readAhead{source: src, full: make(chan *spanBatch, readAheadBatches), empty: make(chan *spanBatch, readAheadBatches),
		stop: make(chan struct{}), done: make(chan struct{})}
	for range readAheadBatches {
		r.empty <- &spanBatch{}
	}
	go r.run()
	return r
}

func (r *readAhead) run() {
	defer close(r.done)
	var sp rawSpan
	for {
		var b *spanBatch
		select {
		case b = <-r.empty:
		case <-r.stop:
			return
		}
		b.reset()
		for len(b.spans) < readAheadSpans && b.err == nil {
			if err := r.source.next(&sp); err != nil {
				b.err = err
			} else {
				b.add(&sp)
			}
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

func (b *spanBatch) reset() {
	b.spans, b.bytes, b.events, b.outs, b.err = b.spans[:0], b.bytes[:0], b.events[:0], b.outs[:0], nil
}

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
	for r.cur == nil || r.i == len(r.cur.spans) {
		if r.cur != nil {
			if r.cur.err != nil {
				return r.cur.err
			}
			r.empty <- r.cur
		}
		r.cur, r.i = <-r.full, 0
	}
	*sp = r.cur.spans[r.i]
	r.i++
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
