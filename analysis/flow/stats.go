package flow

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/flightrec/flightrec/internal/flowspec"
)

// Stats accumulates the reference tool's four analyses over traces. Add
// every trace, then write the reports.
type Stats struct {
	// tag -> per-tag message statistics
	tags map[string]*tagStats
	// node -> handling time of its spans: receipt to the span's last event
	services    map[string]*dist
	notSent     int
	notReceived int
	// Messages of nodes whose input is missing, counted apart from loss.
	fromMissing, toMissing int
	missing                []uint16

	traceTags map[string]*traceTagStats

	lockTraces, nonLockTraces int
	locksPerTrace             acc
	lockOK, lockFail          int
	acquire, fail, held       acc

	interceptors map[string]map[string]*acc // trace tag -> Command@Interceptor -> self time (ns)

	lastTag   string // the tag s.tag found last, and its figures
	lastStats *tagStats
	lastTrace *traceTagStats // the trace tag found last
	svc       byNumber[dist] // services by node number

	scratch statsScratch
}

// byNumber finds the figures the reports key by node names again by the
// node numbers of one merge, in a table of nodes or node pairs, so that
// a message costs no hashing of names. A trace of another merge starts
// the table over.
type byNumber[V any] struct {
	m    *Merger
	vals []*V
}

// get returns the entry of byName for node number i (a pair's index),
// created under name() if absent.
func getByNumber[N comparable, V any](c *byNumber[V], m *Merger, size, i int, byName map[N]*V, name func() N) *V {
	if c.m != m {
		c.m, c.vals = m, make([]*V, size)
	}
	if v := c.vals[i]; v != nil {
		return v
	}
	n := name()
	v := byName[n]
	if v == nil {
		v = new(V)
		byName[n] = v
	}
	c.vals[i] = v
	return v
}

// route returns the message counts a -> b of tag ts.
func (s *Stats) route(ts *tagStats, m *Merger, a, b uint16) *RouteCounts {
	n := len(m.Nodes)
	return getByNumber(&ts.routeOf, m, n*n, int(a)*n+int(b), ts.routes, func() [2]string { return [2]string{m.Nodes[a], m.Nodes[b]} })
}

// latency returns the one-way latency a -> b of tag ts.
func (s *Stats) latency(ts *tagStats, m *Merger, a, b uint16) *dist {
	n := len(m.Nodes)
	return getByNumber(&ts.latencyOf, m, n*n, int(a)*n+int(b), ts.latency, func() [2]string { return [2]string{m.Nodes[a], m.Nodes[b]} })
}

// handle returns the incoming-to-handle times of node b for tag ts.
func (s *Stats) handle(ts *tagStats, m *Merger, b uint16) *dist {
	return getByNumber(&ts.handleOf, m, len(m.Nodes), int(b), ts.handle, func() string { return m.Nodes[b] })
}

// latencySample is one message copy's one-way latency from a node.
type latencySample struct {
	from uint16
	ns   int64
}

// reception is one copy of a message that arrived at a node.
type reception struct {
	ev      *Event // when the copy arrived
	handle  *Event // the handling, nil for a discard
	discard bool
}

func (r reception) node() uint16 { return r.ev.Node }

// threadKey is one node's thread.
type threadKey struct {
	node   uint16
	thread uint32
}

// NewStats returns empty statistics.
func NewStats() *Stats {
	return &Stats{
		tags: make(map[string]*tagStats), services: make(map[string]*dist),
		traceTags: make(map[string]*traceTagStats), interceptors: make(map[string]map[string]*acc),
	}
}

type tagStats struct {
	handle  map[string]*dist           // receiving node -> incoming-to-handle delay
	routes  map[[2]string]*RouteCounts // sender, receiver
	latency map[[2]string]*dist        // sender, receiver -> one-way latency

	// The same figures by the node numbers of a merge.
	routeOf             byNumber[RouteCounts]
	latencyOf, handleOf byNumber[dist]
}

// RouteCounts are the counters of one route (sender -> receiver). Every
// copy of a message addressed to the receiver is exactly one of: the
// first handled copy (Unique), a discarded copy, a copy handled again
// (Ignored), a transmission that did not arrive (Lost) or a copy that no
// transmission accounts for, a network duplicate (Duplicate). Total is
// their sum.
type RouteCounts struct {
	Unique    int `json:"unique"`
	Total     int `json:"total"`
	Discarded int `json:"discarded"`
	Ignored   int `json:"ignored"`
	Lost      int `json:"lost"`
	Duplicate int `json:"duplicate"`
}

type traceTagStats struct {
	name       string
	n          int
	msgs       acc
	combos     map[string]*comboCount // messages by tag combination
	lastCombo  *comboCount            // the combination counted last
	nodes      acc
	threads    acc
	processing acc // ns
	wall       acc // ms
	duration   dist
}

// comboCount counts the messages of one tag combination.
type comboCount struct {
	name string
	n    int
}

// comboCounts returns the messages per tag combination.
func (ts *traceTagStats) comboCounts() map[string]int {
	out := make(map[string]int, len(ts.combos))
	for k, c := range ts.combos {
		out[k] = c.n
	}
	return out
}

// acc keeps count, sum, min and max.
type acc struct {
	n             int
	sum, min, max float64
}

func (a *acc) add(v float64) {
	if a.n == 0 || v < a.min {
		a.min = v
	}
	if a.n == 0 || v > a.max {
		a.max = v
	}
	a.n++
	a.sum += v
}

func (a *acc) avg() float64 {
	if a.n == 0 {
		return math.NaN()
	}
	return a.sum / float64(a.n)
}

// spanKey identifies a span of a trace.
type spanKey struct {
	node uint16
	span uint32
}

// Add accumulates one trace. One pass over its events (statsScratch.index)
// finds what every statistic needs; each message's own events are then
// at hand.
func (s *Stats) Add(t *Trace) {
	sc := &s.scratch
	sc.index(t)
	ts := s.traceTagOf(sc.traceTags)
	s.addMessages(t, ts)
	s.addServices(t)
	s.addTrace(t, ts)
	s.addLocks(t)
	s.addInterceptors(t, ts.name)
}

// appendTagKey appends tags, sorted in place, joined by sep, to buf:
// "-no-tag-" for none.
func appendTagKey(buf []byte, tags []string, sep byte) []byte {
	if len(tags) == 0 {
		return append(buf, "-no-tag-"...)
	}
	slices.Sort(tags)
	for i, tg := range tags {
		if i > 0 {
			buf = append(buf, sep)
		}
		buf = append(buf, tg...)
	}
	return buf
}

// traceTagOf returns the figures of the trace tag of a trace's distinct
// trace tags (TraceTag). The tag found last is kept, as most traces share
// their tag with the one before, and the tag is put together in a buffer:
// only a tag new to the statistics costs an allocation.
func (s *Stats) traceTagOf(tags []string) *traceTagStats {
	tag := appendTagKey(s.scratch.tagBuf[:0], tags, '+')
	s.scratch.tagBuf = tag
	if s.lastTrace != nil && string(tag) == s.lastTrace.name {
		return s.lastTrace
	}
	ts := s.traceTags[string(tag)]
	if ts == nil {
		ts = &traceTagStats{name: string(tag), combos: make(map[string]*comboCount)}
		s.traceTags[ts.name] = ts
	}
	s.lastTrace = ts
	return ts
}

// addMessages adds the trace's messages: their routes, latencies and
// incoming-to-handle times per message tag, and the trace tag's tag
// combinations.
func (s *Stats) addMessages(t *Trace, ts *traceTagStats) {
	evs := t.Events
	sc := &s.scratch
	s.missing = t.m.MissingNodes
	involvesMissing := false
	if len(s.missing) > 0 {
		for _, k := range t.Messages {
			if n, ok := missingNode(t, k, s.missing); ok && slices.Contains(s.missing, n) {
				involvesMissing = true
				break
			}
		}
	}
	for _, k := range t.Messages {
		sends, recs := sc.sends[:0], sc.recs[:0]
		sc.tagSet.reset()
		combo := sc.combo[:0]
		if mi := sc.msgIndex.find(k); mi >= 0 {
			for _, i := range sc.messageEvents(mi) {
				e := &evs[i]
				sp := &sc.spans[sc.spanOf[i]]
				switch e.Kind {
				case flowspec.SendStarted, flowspec.NonCausalSend:
					sends = append(sends, e)
					continue
				case flowspec.HandleStart:
					r := reception{ev: e, handle: e}
					if sp.incoming >= 0 {
						r.ev = &evs[sp.incoming]
					}
					recs = append(recs, r)
					// The message's tag combination: the message tags of
					// the spans that handle it.
					for _, tg := range sp.tags {
						if !slices.Contains(combo, tg) {
							combo = append(combo, tg)
						}
					}
				case flowspec.Discard:
					recs = append(recs, reception{ev: e, discard: true})
				default:
					continue
				}
				for _, tg := range sp.tags {
					sc.tagSet.at(tg)
				}
			}
		}
		sc.sends, sc.recs, sc.combo = sends, recs, combo
		s.countCombo(ts, combo)
		if len(sends) == 0 {
			if n, ok := missingNode(t, k, s.missing); ok && slices.Contains(s.missing, n) {
				s.fromMissing++
			} else {
				s.notSent++
			}
		}
		if len(recs) == 0 {
			if involvesMissing {
				s.toMissing++
			} else {
				s.notReceived++
			}
		}
		if len(sends) == 0 || len(recs) == 0 {
			continue
		}
		tags := append(sc.tags[:0], sc.tagSet.keys...)
		if len(tags) == 0 {
			tags = append(tags, "-no-tag-")
		}
		sc.tags = tags
		// The route starts at the first transmission's node: the first of
		// the transmissions by time (the first of those at one time).
		sorted := sends
		slices.SortStableFunc(sorted, func(a, b *Event) int { return cmp.Compare(a.Wall, b.Wall) })
		first := sorted[0]
		// The copies by receiving node, each node's by time.
		slices.SortStableFunc(recs, func(a, b reception) int {
			if a.node() != b.node() {
				return cmp.Compare(a.node(), b.node())
			}
			return cmp.Compare(a.ev.Wall, b.ev.Wall)
		})
		for len(recs) > 0 {
			n := recs[0].node()
			j := 1
			for j < len(recs) && recs[j].node() == n {
				j++
			}
			s.addRoute(t, sc, tags, first, sorted, n, recs[:j])
			recs = recs[j:]
		}
	}
}

// missingNode returns the node number of message k's compact ID, if
// there are nodes without input (missing) to look for; else false, without
// reading the ID's text.
func missingNode(t *Trace, k int32, missing []uint16) (uint16, bool) {
	if len(missing) == 0 {
		return 0, false
	}
	return compactNode([]byte(t.MessageID(k)))
}

// addRoute adds the copies of a message that arrived at node n (recs, by
// time) to the figures of each of its tags; sorted are the message's
// transmissions by time, first the route's start.
func (s *Stats) addRoute(t *Trace, sc *statsScratch, tags []string, first *Event, sorted []*Event, n uint16, recs []reception) {
	var rc RouteCounts
	// Match every copy that arrived to the latest transmission not
	// matched yet that precedes it (corrected wall time); a copy
	// that arrives before every transmission (clock residue) takes
	// the first. Unmatched copies are network duplicates;
	// unmatched transmissions before the last matched one are
	// lost; those after it were not addressed to this node (a
	// retransmission to another receiver).
	matched := sc.matched[:0]
	matched = append(matched, make([]bool, len(sorted))...)
	sc.matched = matched
	lastMatched := -1
	lat := sc.lat[:0]
	firstHandled := true
	for _, r := range recs {
		j := -1
		for i := len(sorted) - 1; i >= 0; i-- {
			if !matched[i] && sorted[i].Wall <= r.ev.Wall {
				j = i
				break
			}
		}
		if j < 0 && sorted[0].Wall > r.ev.Wall && !matched[0] {
			j = 0
		}
		switch {
		case j < 0:
			rc.Duplicate++
			continue
		case r.discard:
			rc.Discarded++
		case firstHandled:
			rc.Unique++
			firstHandled = false
		default:
			rc.Ignored++
		}
		matched[j] = true
		lastMatched = max(lastMatched, j)
		if sorted[j].Node != n {
			// One way, between corrected wall clocks.
			lat = append(lat, latencySample{sorted[j].Node, r.ev.Wall - sorted[j].Wall})
		} else {
			// A node's delivery to itself: one monotonic clock.
			lat = append(lat, latencySample{n, r.ev.Nano - sorted[j].Nano})
		}
	}
	sc.lat = lat
	for i := 0; i < lastMatched; i++ {
		if !matched[i] {
			rc.Lost++
		}
	}
	rc.Total = rc.Unique + rc.Discarded + rc.Ignored + rc.Lost + rc.Duplicate
	for _, tg := range tags {
		ts := s.tag(tg)
		r := s.route(ts, t.m, first.Node, n)
		r.Unique += rc.Unique
		r.Total += rc.Total
		r.Discarded += rc.Discarded
		r.Ignored += rc.Ignored
		r.Lost += rc.Lost
		r.Duplicate += rc.Duplicate
		for _, l := range lat {
			s.latency(ts, t.m, l.from, n).add(l.ns)
		}
		for _, rec := range recs {
			if rec.handle != nil && rec.ev != rec.handle {
				s.handle(ts, t.m, n).add(rec.handle.Nano - rec.ev.Nano)
			}
		}
	}
}

// countCombo counts a message's tag combination (its distinct tags,
// sorted, joined with ","; none is "-no-tag-") under its trace's tag. The
// combination counted last is kept, and a text of several tags is put
// together in a buffer and looked up without a copy: only a combination
// new to the trace tag costs an allocation.
func (s *Stats) countCombo(ts *traceTagStats, tags []string) {
	key := appendTagKey(s.scratch.comboBuf[:0], tags, ',')
	if len(key) == 0 {
		key = append(key, "-no-tag-"...) // one empty tag
	}
	s.scratch.comboBuf = key
	c := ts.lastCombo
	if c == nil || string(key) != c.name {
		if c = ts.combos[string(key)]; c == nil {
			c = &comboCount{name: string(key)}
			ts.combos[c.name] = c
		}
		ts.lastCombo = c
	}
	c.n++
}

func (s *Stats) tag(name string) *tagStats {
	if s.lastStats != nil && name == s.lastTag {
		return s.lastStats
	}
	ts := s.tags[name]
	if ts == nil {
		ts = &tagStats{handle: make(map[string]*dist), routes: make(map[[2]string]*RouteCounts), latency: make(map[[2]string]*dist)}
		s.tags[name] = ts
	}
	s.lastTag, s.lastStats = name, ts
	return ts
}

// addServices adds the handling time of every span that received a
// message: from its receipt to its last event, on the node's monotonic
// clock (a span counts from the first receipt of a causal span).
func (s *Stats) addServices(t *Trace) {
	sc := &s.scratch
	m := t.m
	for _, si := range sc.serving {
		sp := &sc.spans[si]
		d := getByNumber(&s.svc, m, len(m.Nodes), int(sp.node), s.services, func() string { return m.Nodes[sp.node] })
		d.add(sp.last - sp.first)
	}
}

// TraceTag returns a trace's tag: its distinct trace tags, sorted and
// joined with "+" (the reference took only the first, so merged operations
// lost theirs), or "-no-tag-".
func TraceTag(t *Trace) string {
	var tags []string
	for i := range t.Events {
		if e := &t.Events[i]; e.Kind == flowspec.TraceTag && !slices.Contains(tags, e.Text) {
			tags = append(tags, e.Text)
		}
	}
	return string(appendTagKey(nil, tags, '+'))
}

// addTrace adds the trace to its trace tag's figures (the messages' tag
// combinations are counted by addMessages).
func (s *Stats) addTrace(t *Trace, ts *traceTagStats) {
	sc := &s.scratch
	ts.n++
	ts.msgs.add(float64(len(t.Messages)))
	ts.nodes.add(float64(sc.nodes))
	// A "thread" is a segment of one node's thread ending with
	// TPComplete (or the thread's last event in the trace); processing is
	// the sum of the segments' lengths.
	ts.threads.add(float64(sc.segments))
	ts.processing.add(float64(sc.processed))
	if n := len(t.Events); n > 0 {
		ts.wall.add(float64(msOf(t.Events[n-1].Wall) - msOf(t.Events[0].Wall)))
		ts.duration.add(sc.hi - sc.lo)
	}
}

func (s *Stats) addLocks(t *Trace) {
	type th struct {
		node   uint16
		thread uint32
	}
	type lk struct {
		node uint16
		key  string
	}
	attempt := make(map[th]struct {
		key  string
		nano int64
	})
	heldSince := make(map[lk]int64)
	finished := 0
	for _, i := range s.scratch.checks {
		e := &t.Events[i]
		tk := th{e.Node, e.Thread}
		switch {
		case strings.HasPrefix(e.Text, "LOCK "):
			attempt[tk] = struct {
				key  string
				nano int64
			}{strings.TrimPrefix(e.Text, "LOCK "), e.Nano}
		case e.Text == "LOCK_OK" || e.Text == "LOCK_FAIL":
			a, ok := attempt[tk]
			if !ok {
				continue
			}
			delete(attempt, tk)
			finished++
			if e.Text == "LOCK_OK" {
				s.lockOK++
				s.acquire.add(float64(e.Nano - a.nano))
				// Locks are per node: the same key on two nodes is two locks.
				heldSince[lk{e.Node, a.key}] = e.Nano
			} else {
				s.lockFail++
				s.fail.add(float64(e.Nano - a.nano))
			}
		case strings.HasPrefix(e.Text, "UNLOCK"):
			list := e.Text[strings.IndexByte(e.Text+"[", '['):]
			list = strings.TrimSuffix(strings.TrimPrefix(list, "["), "]")
			for _, key := range strings.Split(list, ",") {
				key = strings.TrimSpace(key)
				if since, ok := heldSince[lk{e.Node, key}]; ok {
					s.held.add(float64(e.Nano - since))
					delete(heldSince, lk{e.Node, key})
				}
			}
		}
	}
	// Locks still held when the trace ends count as acquired, not as held
	// for some time; the reference dropped the whole trace instead.
	if finished == 0 {
		s.nonLockTraces++
	} else {
		s.lockTraces++
		s.locksPerTrace.add(float64(finished))
	}
}

// addInterceptors attributes time to Infinispan-style interceptors from
// checkpoints "INT <Command>@>@<Interceptor>" (about to call it) and
// "INT <Command>@<@<Interceptor>" (it returned). Within a span, per
// command, interceptors nest; every interval between two consecutive INT
// checkpoints of the command belongs to the interceptor on top of the
// stack during it, so an interceptor's record is its own time: the part
// before it calls the next one (which the reference lost) plus the part
// after that returns.
func (s *Stats) addInterceptors(t *Trace, tag string) {
	if len(s.scratch.checks) == 0 {
		return
	}
	if tag == "-no-tag-" {
		tag = "NO_TAG"
	}
	type frame struct {
		name string
		self int64
	}
	type ck struct {
		span    spanKey
		command string
	}
	type state struct {
		stack []frame
		last  int64
	}
	states := make(map[ck]*state)
	for _, i := range s.scratch.checks {
		e := &t.Events[i]
		if !strings.HasPrefix(e.Text, "INT ") {
			continue
		}
		body := e.Text[4:]
		var cmd, icpt string
		var enter bool
		if c, rest, ok := strings.Cut(body, "@>@"); ok {
			cmd, icpt, enter = c, rest, true
		} else if c, rest, ok := strings.Cut(body, "@<@"); ok {
			cmd, icpt = c, rest
		} else {
			continue
		}
		k := ck{spanKey{e.Node, e.Span}, cmd}
		st := states[k]
		if st == nil {
			st = &state{}
			states[k] = st
		}
		if n := len(st.stack); n > 0 {
			st.stack[n-1].self += e.Nano - st.last
		}
		st.last = e.Nano
		if enter {
			st.stack = append(st.stack, frame{name: icpt})
			continue
		}
		n := len(st.stack)
		if n == 0 || st.stack[n-1].name != icpt {
			continue // unbalanced: skip rather than guess
		}
		f := st.stack[n-1]
		st.stack = st.stack[:n-1]
		m := s.interceptors[tag]
		if m == nil {
			m = make(map[string]*acc)
			s.interceptors[tag] = m
		}
		a := m[cmd+"@"+icpt]
		if a == nil {
			a = &acc{}
			m[cmd+"@"+icpt] = a
		}
		a.add(float64(f.self))
	}
}

// Reports chooses the reports to write.
type Reports struct {
	Messages, Traces, Locks, Interceptors bool
}

// writeServices writes the handling time of each node's spans.
func (s *Stats) writeServices(b *strings.Builder) {
	b.WriteString("\n************\n* SERVICES *\n************\n")
	for _, n := range slices.Sorted(maps.Keys(s.services)) {
		fmt.Fprintf(b, "%s:\thandling %s\n", n, s.services[n])
	}
}

// WriteText writes the chosen reports in the reference tool's layout.
func (s *Stats) WriteText(w io.Writer, r Reports) error {
	var b strings.Builder
	if r.Messages {
		s.writeMessages(&b)
		s.writeServices(&b)
	}
	if r.Traces {
		s.writeTraces(&b)
	}
	if r.Locks {
		s.writeLocks(&b)
	}
	if r.Interceptors {
		s.writeInterceptors(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// PairLine is one node pair of a tag's transport section.
type PairLine struct {
	A string `json:"a"` // printed first
	B string `json:"b"`
	// Route counts and one-way latency A -> B and A <- B, when present in
	// the tag.
	AB        *RouteCounts `json:"aToB"`
	BA        *RouteCounts `json:"bToA"`
	LatencyAB *DistJSON    `json:"latencyAToB"`
	LatencyBA *DistJSON    `json:"latencyBToA"`

	latAB, latBA *dist
}

// TagMessages is the message report of one tag (or of several tags with
// equal figures).
type TagMessages struct {
	Tags []string `json:"tags"`
	// receiving node -> time from the receipt of a message to the start
	// of its handling
	IncomingToHandle map[string]*DistJSON `json:"incomingToHandle"`
	Pairs            []PairLine           `json:"pairs"`
	// MeanLatencyNs is the mean one-way latency of all the tag's
	// messages, null if none was matched.
	MeanLatencyNs  *float64 `json:"meanLatencyNs"`
	UniqueMessages int      `json:"uniqueMessages"`
	TotalMessages  int      `json:"totalMessages"`

	handle map[string]*dist
}

// MessageReport returns the message statistics per tag, tags with equal
// figures merged as the reference does.
func (s *Stats) MessageReport() []TagMessages {
	names := make([]string, 0, len(s.tags))
	for n := range s.tags {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []TagMessages
	var texts []string
	for _, name := range names {
		ts := s.tags[name]
		tm := TagMessages{Tags: []string{name}, IncomingToHandle: make(map[string]*DistJSON), handle: ts.handle}
		for node, h := range ts.handle {
			tm.IncomingToHandle[node] = h.json()
		}
		seen := make(map[[2]string]bool)
		var keys [][2]string
		for k := range ts.routes {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
		var latSum float64
		var latN int64
		for _, k := range keys {
			a, b := k[0], k[1]
			rev := ts.routes[[2]string{b, a}]
			if rev != nil && b < a {
				a, b = b, a
			}
			if seen[[2]string{a, b}] {
				continue
			}
			seen[[2]string{a, b}] = true
			pl := PairLine{A: a, B: b, AB: ts.routes[[2]string{a, b}], latAB: ts.latency[[2]string{a, b}]}
			if a != b { // a node's delivery to itself is one route
				pl.BA, pl.latBA = ts.routes[[2]string{b, a}], ts.latency[[2]string{b, a}]
			}
			pl.LatencyAB, pl.LatencyBA = pl.latAB.json(), pl.latBA.json()
			for _, d := range []*dist{pl.latAB, pl.latBA} {
				if d != nil {
					latSum += d.sum
					latN += d.n
				}
			}
			for _, rc := range []*RouteCounts{pl.AB, pl.BA} {
				if rc != nil {
					tm.UniqueMessages += rc.Unique
					tm.TotalMessages += rc.Total
				}
			}
			tm.Pairs = append(tm.Pairs, pl)
		}
		if latN > 0 {
			v := latSum / float64(latN)
			tm.MeanLatencyNs = &v
		}
		var body strings.Builder
		writeTagBody(&body, &tm)
		if i := slices.Index(texts, body.String()); i >= 0 {
			out[i].Tags = append(out[i].Tags, name)
			continue
		}
		texts = append(texts, body.String())
		out = append(out, tm)
	}
	return out
}

func writeTagBody(b *strings.Builder, tm *TagMessages) {
	b.WriteString("\tIncoming to handle times:\n")
	for _, n := range slices.Sorted(maps.Keys(tm.handle)) {
		fmt.Fprintf(b, "\t\t%s:\t%s\n", n, tm.handle[n])
	}
	b.WriteString("\tTransport:\n")
	route := func(rc *RouteCounts) string {
		return fmt.Sprintf("%9d unique, %9d total, %5d discarded, %5d ignored, %5d lost, %5d duplicate",
			rc.Unique, rc.Total, rc.Discarded, rc.Ignored, rc.Lost, rc.Duplicate)
	}
	latency := func(d *dist) string {
		if d == nil {
			return "latency unknown"
		}
		return "latency " + d.String()
	}
	for _, p := range tm.Pairs {
		if p.AB != nil {
			fmt.Fprintf(b, "\t\t%s\t -> %s:\t%s\n", p.A, p.B, route(p.AB))
			fmt.Fprintf(b, "\t\t%s\t -> %s:\t%s\n", p.A, p.B, latency(p.latAB))
		}
		if p.BA != nil {
			fmt.Fprintf(b, "\t\t%s\t<-  %s:\t%s\n", p.A, p.B, route(p.BA))
			fmt.Fprintf(b, "\t\t%s\t<-  %s:\t%s\n", p.A, p.B, latency(p.latBA))
		}
	}
	avg := "unknown"
	if tm.MeanLatencyNs != nil {
		avg = formatNs(int64(*tm.MeanLatencyNs + 0.5))
	}
	fmt.Fprintf(b, "\t\tMean latency:\t%s\tUnique messages: %9d\tTotal messages: %9d\n",
		avg, tm.UniqueMessages, tm.TotalMessages)
}

func (s *Stats) writeMessages(b *strings.Builder) {
	b.WriteString("\n************\n* MESSAGES *\n************\n")
	for _, tm := range s.MessageReport() {
		b.WriteString(strings.Join(tm.Tags, ", ") + "\n")
		writeTagBody(b, &tm)
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "Transmission of %d messages not detected.\n", s.notSent)
	fmt.Fprintf(b, "%d messages have not been received at all.\n", s.notReceived)
	if len(s.missing) > 0 {
		nums := make([]string, len(s.missing))
		for i, n := range s.missing {
			nums[i] = strconv.Itoa(int(n))
		}
		list := strings.Join(nums, ", ")
		fmt.Fprintf(b, "%d messages came from nodes without input (%s).\n", s.fromMissing, list)
		fmt.Fprintf(b, "%d messages were not received in traces that involve nodes without input (%s): probably sent to them.\n", s.toMissing, list)
	}
}

func (s *Stats) traceTagNames() []string {
	names := make([]string, 0, len(s.traceTags))
	for n := range s.traceTags {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (s *Stats) writeTraces(b *strings.Builder) {
	b.WriteString("\n**********\n* TRACES *\n**********\n")
	for _, name := range s.traceTagNames() {
		ts := s.traceTags[name]
		fmt.Fprintf(b, "%s:\t%d traces, avg %.2f msg (%d - %d)\n", name, ts.n, ts.msgs.avg(), int(ts.msgs.min), int(ts.msgs.max))
		combos := make([]string, 0, len(ts.combos))
		for c := range ts.combos {
			combos = append(combos, c)
		}
		slices.Sort(combos)
		for _, c := range combos {
			fmt.Fprintf(b, "\t%1.2fx: %s\n", float64(ts.combos[c].n)/float64(ts.n), c)
		}
		fmt.Fprintf(b, "\tavg %.2f nodes, avg %.2f threads (%d - %d)\n", ts.nodes.avg(), ts.threads.avg(), int(ts.threads.min), int(ts.threads.max))
		fmt.Fprintf(b, "\tProcessing took avg %.2f us (%.2f - %.2f)\n", ts.processing.avg()/1e3, ts.processing.min/1e3, ts.processing.max/1e3)
		fmt.Fprintf(b, "\tWall time delta %.2f ms (%d - %d)\n", ts.wall.avg(), int64(ts.wall.min), int64(ts.wall.max))
		fmt.Fprintf(b, "\tDuration %s\n", &ts.duration)
		b.WriteString("\n")
	}
}

// rangeUs prints "avg us (min - max)"; with no values every figure is
// NaN (the reference printed Long.MAX_VALUE and Long.MIN_VALUE as the
// extremes of nothing).
func rangeUs(a *acc) string {
	if a.n == 0 {
		return "NaN us (NaN - NaN)"
	}
	return fmt.Sprintf("%.2f us (%.2f - %.2f)", a.avg()/1e3, a.min/1e3, a.max/1e3)
}

func (s *Stats) writeLocks(b *strings.Builder) {
	b.WriteString("\n*********\n* LOCKS *\n*********\n")
	if s.locksPerTrace.n == 0 {
		fmt.Fprintf(b, "%d locking traces with NaN locks (NaN - NaN), %d non-locking traces\n", s.lockTraces, s.nonLockTraces)
	} else {
		fmt.Fprintf(b, "%d locking traces with %.2f locks (%d - %d), %d non-locking traces\n",
			s.lockTraces, s.locksPerTrace.avg(), int(s.locksPerTrace.min), int(s.locksPerTrace.max), s.nonLockTraces)
	}
	all := float64(s.lockOK + s.lockFail)
	fmt.Fprintf(b, "%d successful locks (%.2f%%), %d failed attempts (%.2f%%)\n",
		s.lockOK, 100*float64(s.lockOK)/all, s.lockFail, 100*float64(s.lockFail)/all)
	fmt.Fprintf(b, "Acquiring lock takes %s\n", rangeUs(&s.acquire))
	if s.lockFail > 0 {
		fmt.Fprintf(b, "Failing to acquire lock takes %s\n", rangeUs(&s.fail))
	}
	fmt.Fprintf(b, "Lock is held for %s\n", rangeUs(&s.held))
}

func (s *Stats) writeInterceptors(b *strings.Builder) {
	b.WriteString("\n****************\n* INTERCEPTORS *\n****************\n")
	tags := make([]string, 0, len(s.interceptors))
	for t := range s.interceptors {
		tags = append(tags, t)
	}
	slices.Sort(tags)
	for _, tag := range tags {
		b.WriteString(tag + "\n")
		m := s.interceptors[tag]
		keys := slices.Sorted(maps.Keys(m))
		for _, k := range keys {
			a := m[k]
			fmt.Fprintf(b, "\t%s:\tavg %9.2f us in %9d records (%.2f - %.2f)\n", k, a.avg()/1e3, a.n, a.min/1e3, a.max/1e3)
		}
	}
}
