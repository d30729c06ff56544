package flow

import (
	"cmp"
	"slices"
	"sync/atomic"
)

// traceOut finishes the traces the merging pass releases and hands them to
// Merge's fn on a goroutine of its own, one at a time and in release order:
// ordering a trace's events and the caller's work on it (the statistics,
// the printing) take about as long as the merge itself, so with both on
// one goroutine the merging pass used one core.
//
// Finishing and fn run on two goroutines, the first handing batches of
// finished traces to the second: ordering the events is a third of the
// work and fn (the statistics) the rest, more than the merging goroutine
// does, so on one goroutine they bounded the merging pass.
//
// What the finishing reads of the Merger (node and thread names, message
// texts) is fixed during the merging pass: only pass 1 interns IDs.
type traceOut struct {
	m        *Merger
	fn       func(*Trace) error
	ch       chan []*Trace // released, to be finished
	finished chan []*Trace // finished, for fn
	batch    []*Trace      // being filled
	done     chan struct{}
	failed   atomic.Bool // fn returned an error: the merge stops
	err      error       // fn's error, read after close
	// counted by run, added to the Merger at close
	traces, incomplete int
	inconsistencies    int64
	ids                []keyText    // sortMessages' scratch
	compact            []keyCompact // sortMessages' scratch
}

type keyText struct {
	key  int32
	text string
}

type keyCompact struct {
	key int32
	id  uint64
}

const (
	traceOutBatch = 64 // traces per hand-off
	traceOutQueue = 8  // batches waiting
)

func newTraceOut(m *Merger, fn func(*Trace) error) *traceOut {
	o := &traceOut{m: m, fn: fn, ch: make(chan []*Trace, traceOutQueue), finished: make(chan []*Trace, traceOutQueue),
		done: make(chan struct{}), batch: make([]*Trace, 0, traceOutBatch)}
	go o.finishAll()
	go o.run()
	return o
}

// finishAll finishes the released traces, batch by batch, and passes the
// batches on to run. After fn failed it only drains: the merge stops.
func (o *traceOut) finishAll() {
	defer close(o.finished)
	for batch := range o.ch {
		if o.failed.Load() {
			continue
		}
		for _, t := range batch {
			o.finish(t)
		}
		o.finished <- batch
	}
}

// run calls fn with every finished trace, in order, until fn fails.
func (o *traceOut) run() {
	defer close(o.done)
	for batch := range o.finished {
		for _, t := range batch {
			if o.err == nil {
				// Counted as fn gets them, as when one goroutine did
				// both: the traces finished past fn's error are not.
				o.traces++
				if t.Incomplete {
					o.incomplete++
				}
				o.inconsistencies += int64(t.Inconsistencies)
				if err := o.fn(t); err != nil {
					o.err = err
					o.failed.Store(true)
				}
			}
		}
	}
}

// finish sorts the trace's messages by ID and its events into causal order.
func (o *traceOut) finish(t *Trace) {
	o.sortMessages(t.Messages)
	t.order()
}

// sortMessages sorts message keys by their IDs (compareIDs). Compact IDs
// "node:counter" compare as the pair of numbers, without their text;
// compareIDs orders them so. Each key's ID is read once, not at every
// comparison.
func (o *traceOut) sortMessages(keys []int32) {
	if len(keys) < 2 {
		return
	}
	ids := o.m.ids
	compact := o.compact[:0]
	for _, k := range keys {
		id, ok := ids.compact(uint32(k))
		if !ok {
			break
		}
		compact = append(compact, keyCompact{k, id})
	}
	o.compact = compact[:0]
	if len(compact) == len(keys) {
		slices.SortFunc(compact, func(a, b keyCompact) int { return cmp.Compare(a.id, b.id) })
		for i := range compact {
			keys[i] = compact[i].key
		}
		return
	}
	texts := o.ids[:0]
	for _, k := range keys {
		texts = append(texts, keyText{k, ids.Text(uint32(k))})
	}
	slices.SortFunc(texts, func(a, b keyText) int { return compareIDs(a.text, b.text) })
	for i := range texts {
		keys[i] = texts[i].key
	}
	clear(texts)
	o.ids = texts[:0]
}

// compact returns the integer form of key k's ID, node<<48 | counter,
// if it is a compact ID.
func (t *idTable) compact(k uint32) (uint64, bool) {
	id := t.ident.Get(int(k))
	return id, id&textIdent == 0
}

// send queues a released trace. Traces go in batches: a hand-off per
// trace cost more than the finishing, the goroutine waking for each.
func (o *traceOut) send(t *Trace) {
	o.batch = append(o.batch, t)
	if len(o.batch) == traceOutBatch {
		o.flush()
	}
}

func (o *traceOut) flush() {
	if len(o.batch) == 0 {
		return
	}
	o.ch <- o.batch
	o.batch = make([]*Trace, 0, traceOutBatch)
}

// close waits for the last trace and returns fn's error, if any.
func (o *traceOut) close() error {
	o.flush()
	close(o.ch)
	<-o.done
	o.m.TracesOut += o.traces
	o.m.IncompleteTraces += o.incomplete
	o.m.CausalInconsistencies += o.inconsistencies
	return o.err
}
