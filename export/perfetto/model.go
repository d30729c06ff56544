package perfetto

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/flightrec/flightrec/analysis/flow"
	"github.com/flightrec/flightrec/internal/flowspec"
	"github.com/flightrec/flightrec/internal/jfrstack"
	"github.com/flightrec/flightrec/internal/quantity"
	"github.com/flightrec/flightrec/jfr"
)

// Input is one recording.
type Input struct {
	Name   string
	Reader *jfr.Reader
	// Flow, if set, reads the file again for analysis/flow's merge, which
	// runs when the recordings hold flow events.
	Flow *flow.Input
}

// Format is an output format.
type Format int

// The output formats.
const (
	Proto Format = iota // Perfetto's TracePacket protobuf
	JSON                // Chrome trace-event JSON
)

// Options shapes the trace.
type Options struct {
	Format Format
}

// Write converts the inputs and writes the trace to w. A read error stops
// it before anything is written; it names the file, chunk and offset.
func Write(w io.Writer, inputs []Input, opts Options) error {
	m, err := build(inputs, opts.Format)
	if err != nil {
		return err
	}
	if opts.Format == JSON {
		return m.writeJSON(w)
	}
	return m.writeProto(w)
}

// arg is one debug annotation.
type arg struct {
	name string
	kind byte // 'i', 'f', 's'
	i    int64
	f    float64
	s    string
}

// item is a slice (end >= start) or an instant (end < 0). Its debug
// annotations are encoded for the output format as they are read, into
// the model's args buffer (a few bytes per field instead of a value each).
type item struct {
	start, end int64
	name       string
	args       [2]int // argBuf[args[0]:args[1]]
	links      int32  // 1 + index into model.links, 0 for none: few events have flow arrows
}

// links are the flow ids an event starts and ends.
type links struct{ out, in []uint64 }

// linksOf returns an item's flow ids, making room for them if add.
func (m *model) linksOf(it *item, add bool) *links {
	if it.links == 0 {
		if !add {
			return &links{}
		}
		m.links = append(m.links, links{})
		it.links = int32(len(m.links))
	}
	return &m.links[it.links-1]
}

// track is a thread's track or an event type's track in a process.
type track struct {
	proc   int
	name   string
	tid    int  // 0 for a track that is not a thread
	flow   bool // made by the flow merge, on corrected time
	items  []item
	lanes  []int // items' lanes, after layout
	nLanes int
}

type counter struct {
	proc   int
	name   string
	points []point
}

type point struct {
	t int64
	v float64
}

type model struct {
	links    []links
	format   Format
	argBuf   []byte
	procs    []string
	tracks   []*track
	counters []*counter
	byKey    map[string]int // "proc/kind/name" -> track or counter index
	nextTID  int
	flows    uint64 // the last flow id given out
}

func (m *model) track(proc int, key, name string, tid bool) *track {
	k := strconv.Itoa(proc) + "/t/" + key
	if i, ok := m.byKey[k]; ok {
		return m.tracks[i]
	}
	t := &track{proc: proc, name: name}
	if tid {
		m.nextTID++
		t.tid = m.nextTID
	}
	m.byKey[k] = len(m.tracks)
	m.tracks = append(m.tracks, t)
	return t
}

// threadTrack returns the track of thread th in process proc.
func (m *model) threadTrack(proc int, th jfr.Value) *track {
	return m.track(proc, "thread\x00"+jfrstack.ThreadIdentity(th), jfrstack.ThreadName(th), true)
}

func (m *model) counter(proc int, name string) *counter {
	k := strconv.Itoa(proc) + "/c/" + name
	if i, ok := m.byKey[k]; ok {
		return m.counters[i]
	}
	c := &counter{proc: proc, name: name}
	m.byKey[k] = len(m.counters)
	m.counters = append(m.counters, c)
	return c
}

// isFlowType tells whether an event type belongs to message-flow tracing.
func isFlowType(name string) bool {
	for _, e := range flowspec.Events {
		if e.Name == name {
			return true
		}
	}
	return false
}

func fileError(name string, err error) error { return fmt.Errorf("%s: %w", name, err) }

func build(inputs []Input, format Format) (*model, error) {
	m := &model{byKey: map[string]int{}, format: format}
	hasFlow := false
	for i, in := range inputs {
		m.procs = append(m.procs, in.Name)
		flows, err := m.read(i, in)
		if err != nil {
			return nil, err
		}
		hasFlow = hasFlow || flows
	}
	offsets := make([]int64, len(inputs))
	if hasFlow {
		if err := m.addFlow(inputs, offsets); err != nil {
			return nil, err
		}
	}
	m.correct(offsets)
	for _, t := range m.tracks {
		t.layout()
	}
	return m, nil
}

// read reads one recording's events; flows tells whether it has flow
// events (which are left to the merge).
func (m *model) read(proc int, in Input) (flows bool, err error) {
	var ev jfr.Event
	type plan struct {
		skip     bool
		flow     bool // a flow event, left to the merge
		thread   int
		counters []int
		series   []*counter // the counters' series
		track    *track     // the type's track, for events on no thread
		metric   [2]int     // go.RuntimeMetric's name and value
		args     []int
	}
	plans := map[*jfr.Class]*plan{}
	// threads maps the current chunk's thread pool keys to their tracks.
	threads := map[uint64]*track{}
	var chunk *jfr.Chunk
	for {
		err := in.Reader.ReadEvent(&ev)
		if errors.Is(err, io.EOF) {
			return flows, nil
		}
		if err != nil {
			return false, fileError(in.Name, err)
		}
		p := plans[ev.Type]
		if p == nil {
			p = &plan{thread: jfrstack.ThreadField(ev.Type), metric: [2]int{-1, -1}}
			switch n := ev.Type.Name; {
			case isFlowType(n):
				p.skip, p.flow = true, true
			case n == "jdk.ActiveSetting" || n == "jdk.ActiveRecording":
				p.skip = true // configuration, not activity
			case n == "go.RuntimeMetric":
				p.metric = [2]int{ev.Type.FieldIndex("name"), ev.Type.FieldIndex("value")}
			default:
				for _, f := range quantity.Counters[n] {
					if i := ev.Type.FieldIndex(f); i >= 0 {
						p.counters = append(p.counters, i)
						p.series = append(p.series, m.counter(proc, n+"."+f))
					}
				}
			}
			for i, f := range ev.Type.Fields {
				if i > 1 && i != p.thread && f.Name != "stackTrace" && len(p.args) < 16 {
					p.args = append(p.args, i)
				}
			}
			plans[ev.Type] = p
		}
		if p.skip {
			flows = flows || p.flow
			continue
		}
		clock := ev.Chunk.Clock()
		t := clock.Nanos(ev.StartTicks())
		if p.metric[0] >= 0 && p.metric[1] >= 0 {
			c := m.counter(proc, jfrstack.Text(ev.Fields[p.metric[0]]))
			c.points = append(c.points, point{t, ev.Fields[p.metric[1]].Float()})
			continue
		}
		if len(p.counters) > 0 {
			for j, i := range p.counters {
				c := p.series[j]
				c.points = append(c.points, point{t, ev.Fields[i].Float()})
			}
			continue
		}
		var tr *track
		if p.thread >= 0 && ev.Fields[p.thread].Kind() != jfr.KindNull {
			if ev.Chunk != chunk {
				chunk = ev.Chunk
				clear(threads)
			}
			v := ev.Fields[p.thread]
			isRef := v.Kind() == jfr.KindRef
			if tr = threads[v.Key()]; tr == nil || !isRef {
				tr = m.threadTrack(proc, v.Resolve())
				if isRef {
					threads[v.Key()] = tr
				}
			}
		} else {
			if p.track == nil {
				p.track = m.track(proc, "type:"+ev.Type.Name, ev.Type.Name, false)
			}
			tr = p.track
		}
		it := item{start: t, end: -1, name: ev.Type.Name}
		if d := ev.DurationTicks(); d > 0 {
			it.end = t + int64(clock.Duration(d))
		}
		it.args[0] = len(m.argBuf)
		for _, i := range p.args {
			if a, ok := argOf(ev.Type.Fields[i].Name, ev.Fields[i]); ok {
				m.addArg(a)
			}
		}
		it.args[1] = len(m.argBuf)
		tr.items = append(tr.items, it)
	}
}

// argOf turns a field into a debug annotation: numbers, booleans,
// strings, and the names of threads, classes and methods.
func argOf(name string, v jfr.Value) (arg, bool) {
	v = v.Resolve()
	switch v.Kind() {
	case jfr.KindBool:
		if v.Bool() {
			return arg{name: name, kind: 'i', i: 1}, true
		}
		return arg{name: name, kind: 'i'}, true
	case jfr.KindFloat, jfr.KindDouble:
		return arg{name: name, kind: 'f', f: v.Float()}, true
	case jfr.KindString:
		return arg{name: name, kind: 's', s: v.String()}, true
	case jfr.KindStruct:
		switch c := v.Class(); {
		case c == nil:
		case c.Name == "java.lang.Thread":
			return arg{name: name, kind: 's', s: jfrstack.ThreadName(v)}, true
		case c.Name == "java.lang.Class":
			return arg{name: name, kind: 's', s: jfrstack.ClassName(v)}, true
		case c.Name == "jdk.types.Method":
			return arg{name: name, kind: 's', s: jfrstack.MethodName(v)}, true
		default:
			if s := jfrstack.Text(v); s != "" {
				return arg{name: name, kind: 's', s: s}, true
			}
		}
		return arg{}, false
	case jfr.KindNull, jfr.KindInvalid, jfr.KindArray, jfr.KindRef:
		return arg{}, false
	}
	return arg{name: name, kind: 'i', i: v.Int()}, true
}

// addArg encodes a debug annotation for the output format.
func (m *model) addArg(a arg) {
	if m.format == JSON {
		m.argBuf = appendJSONArg(m.argBuf, a)
	} else {
		m.argBuf = appendProtoArg(m.argBuf, a)
	}
}

// args returns an item's encoded annotations.
func (m *model) args(it *item) []byte { return m.argBuf[it.args[0]:it.args[1]] }

// correct moves each recording's events by its node's clock offset (the
// flow tracks were made on corrected time already).
func (m *model) correct(offsets []int64) {
	for _, t := range m.tracks {
		off := offsets[t.proc]
		if t.flow || off == 0 {
			continue
		}
		for i := range t.items {
			it := &t.items[i]
			it.start -= off
			if it.end >= 0 {
				it.end -= off
			}
		}
	}
	for _, c := range m.counters {
		for i := range c.points {
			c.points[i].t -= offsets[c.proc]
		}
	}
}

// layout sorts a track's items and gives each slice the first lane where
// it nests in (or follows) the slices already there.
func (t *track) layout() {
	slices.SortStableFunc(t.items, func(a, b item) int {
		if c := cmp.Compare(a.start, b.start); c != 0 {
			return c
		}
		return cmp.Compare(b.end, a.end) // the longer slice first: it encloses
	})
	t.lanes = make([]int, len(t.items))
	var open [][]int64 // per lane, the ends of the slices still open
	for i, it := range t.items {
		if it.end < 0 {
			continue // instants go on the thread's own lane
		}
		l := 0
		for ; l < len(open); l++ {
			st := open[l]
			for len(st) > 0 && st[len(st)-1] <= it.start {
				st = st[:len(st)-1]
			}
			open[l] = st
			if len(st) == 0 || it.end <= st[len(st)-1] {
				break
			}
		}
		if l == len(open) {
			open = append(open, nil)
		}
		open[l] = append(open[l], it.end)
		t.lanes[i] = l
	}
	t.nLanes = max(len(open), 1)
}

// addFlow merges the flow events of the inputs: a track per node and
// thread with the flow events as instants, and an arrow per message
// from each send to each receipt. offsets gets the nodes' clock offsets.
func (m *model) addFlow(inputs []Input, offsets []int64) error {
	fins := make([]flow.Input, 0, len(inputs))
	for _, in := range inputs {
		if in.Flow == nil {
			return nil // the caller cannot read the files again
		}
		fins = append(fins, *in.Flow)
	}
	merger, err := flow.Merge(fins, nil, func(tr *flow.Trace) error {
		m.addTrace(tr)
		return nil
	})
	if err != nil {
		return err
	}
	if len(merger.Errors) > 0 {
		return merger.Errors[0]
	}
	copy(offsets, merger.Offsets)
	for i, n := range merger.Nodes {
		if n != "" && n != m.procs[i] {
			m.procs[i] = n + " (" + m.procs[i] + ")"
		}
	}
	return nil
}

func (m *model) addTrace(tr *flow.Trace) {
	type end struct {
		tr   *track
		item int
	}
	sends := map[int32][]end{}
	recvs := map[int32][]end{}
	handles := map[int32][]end{}
	for i := range tr.Events {
		e := &tr.Events[i]
		t := m.track(int(e.Node), "flow:"+tr.ThreadName(e), "flow "+tr.ThreadName(e), true)
		t.flow = true
		it := item{start: e.Wall, end: -1, name: flow.KindName(e.Kind)}
		it.args[0] = len(m.argBuf)
		m.addArg(arg{name: "trace", kind: 'i', i: int64(tr.Index)})
		if p := tr.Payload(e); p != "" {
			m.addArg(arg{name: "payload", kind: 's', s: p})
		}
		it.args[1] = len(m.argBuf)
		t.items = append(t.items, it)
		ref := end{t, len(t.items) - 1}
		if e.Msg < 0 {
			continue
		}
		switch e.Kind {
		case flowspec.SendStarted, flowspec.NonCausalSend:
			sends[e.Msg] = append(sends[e.Msg], ref)
		case flowspec.Received:
			recvs[e.Msg] = append(recvs[e.Msg], ref)
		case flowspec.HandleStart:
			handles[e.Msg] = append(handles[e.Msg], ref)
		}
	}
	for msg, ss := range sends {
		rs := recvs[msg]
		if len(rs) == 0 {
			rs = handles[msg] // delivered without a network read
		}
		// One id per arrow: events sharing an id form a chain.
		for _, r := range rs {
			for _, s := range ss {
				m.flows++
				out := m.linksOf(&s.tr.items[s.item], true)
				out.out = append(out.out, m.flows)
				in := m.linksOf(&r.tr.items[r.item], true)
				in.in = append(in.in, m.flows)
			}
		}
	}
}
