package view

import (
	"cmp"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/flightrec/flightrec/internal/quantity"
	"github.com/flightrec/flightrec/jfr"
)

// Filter selects events: of some types (all when empty), on one thread
// (0: any), starting in [From, To) (0: unbounded).
type Filter struct {
	Types  []*Type
	Thread uint32
	From   int64
	To     int64
}

// each calls fn with the index of every event of type t the filter keeps,
// in time order.
func (ix *Index) each(t *Type, f Filter, fn func(e int32)) {
	evs := t.events
	if f.From != 0 {
		evs = evs[sort.Search(len(evs), func(i int) bool { return ix.t[evs[i]] >= f.From }):]
	}
	if f.To != 0 {
		evs = evs[:sort.Search(len(evs), func(i int) bool { return ix.t[evs[i]] >= f.To })]
	}
	for _, e := range evs {
		if f.Thread != 0 && ix.thread[e] != f.Thread {
			continue
		}
		fn(e)
	}
}

// countIn returns the number of events of t starting in [from, to)
// (to 0: unbounded).
func (ix *Index) countIn(t *Type, from, to int64) int {
	evs := t.events
	lo := sort.Search(len(evs), func(i int) bool { return ix.t[evs[i]] >= from })
	hi := len(evs)
	if to != 0 {
		hi = sort.Search(len(evs), func(i int) bool { return ix.t[evs[i]] >= to })
	}
	return max(hi-lo, 0)
}

// FlameNode is one node of a flame graph: a function, its total and self
// weight, its children (heaviest first).
type FlameNode struct {
	Name     int32        `json:"n"` // index into Flame.Names; -1 for the root
	Total    int64        `json:"v"`
	Self     int64        `json:"s"`
	Children []*FlameNode `json:"c,omitempty"`
}

// Flame is a flame graph.
type Flame struct {
	Names  []string   `json:"names"`
	Root   *FlameNode `json:"root"`
	Total  int64      `json:"total"`
	Events int64      `json:"events"`
	Unit   string     `json:"unit"`
	Nodes  int        `json:"nodes"`
	Pruned int        `json:"pruned"` // nodes left out: lighter than MinShare of the total
}

// MinShare is the smallest share of the total a flame node is sent for.
const MinShare = 1.0 / 2000

// errWeight is returned for a weight no selected type has.
var errWeight = errors.New("no selected type has that numeric field")

// DefaultFlameType is the type a flame graph shows first: CPU samples if
// the recordings have them, else the most frequent type with stacks.
func (ix *Index) DefaultFlameType() *Type {
	if t := ix.Type("jdk.ExecutionSample"); t != nil && t.Stack {
		return t
	}
	var best *Type
	for _, t := range ix.Types {
		if t.Stack && (best == nil || t.Count > best.Count) {
			best = t
		}
	}
	return best
}

// Flame aggregates the stacks of the selected stack-carrying events,
// weighted by count, "duration" or a numeric field; invert builds it
// bottom-up (leaf functions at the root).
func (ix *Index) Flame(f Filter, weight string, invert bool) (*Flame, error) {
	per := make([]int64, ix.Stacks.Len())
	fl := &Flame{Unit: "count"}
	used := false
	for _, t := range f.Types {
		if !t.Stack {
			continue
		}
		w, unit, err := ix.weights(t, weight)
		if err != nil {
			if errors.Is(err, errWeight) {
				continue
			}
			return nil, err
		}
		used = true
		fl.Unit = unit
		ix.each(t, f, func(e int32) {
			fl.Events++
			if w == nil {
				per[ix.stack[e]]++
			} else {
				per[ix.stack[e]] += w(e)
			}
		})
	}
	if !used && weight != "" && weight != "count" {
		return nil, errWeight
	}
	ix.buildTree(fl, per, invert)
	return fl, nil
}

// weights returns how to weigh an event of t: nil for a count.
func (ix *Index) weights(t *Type, weight string) (func(int32) int64, string, error) {
	switch weight {
	case "", "count":
		return nil, "count", nil
	case "duration":
		return func(e int32) int64 { return ix.dur[e] }, "nanoseconds", nil
	}
	col, unit, err := ix.column(t, weight)
	if err != nil {
		return nil, "", err
	}
	return func(e int32) int64 { return col[e] }, unit, nil
}

// columns caches numeric fields decoded for flame weights, per type and
// field, indexed like the index's columns (sparse: a map per event).
type columnCache struct {
	mu   sync.Mutex
	cols map[string]map[int32]int64
	unit map[string]string
}

func (ix *Index) column(t *Type, field string) (map[int32]int64, string, error) {
	cc := &ix.cols
	cc.mu.Lock()
	defer cc.mu.Unlock()
	key := t.Name + "\x00" + field
	if c, ok := cc.cols[key]; ok {
		return c, cc.unit[key], nil
	}
	col := make(map[int32]int64, len(t.events))
	unit := ""
	ix.decode.mu.Lock()
	defer ix.decode.mu.Unlock()
	var ev jfr.Event
	var q quantity.Field
	var qc *jfr.Class
	for _, e := range t.events {
		if err := ix.decodeEvent(e, &ev); err != nil {
			return nil, "", err
		}
		if ev.Type != qc {
			var ok bool
			q, ok = quantity.Of(ev.Type, field)
			if !ok {
				return nil, "", errWeight
			}
			qc, unit = ev.Type, string(q.Unit)
		}
		col[e] = q.Value(&ev)
	}
	if cc.cols == nil {
		cc.cols, cc.unit = map[string]map[int32]int64{}, map[string]string{}
	}
	cc.cols[key], cc.unit[key] = col, unit
	return col, unit, nil
}

// buildTree turns per-stack weights into a pruned tree.
func (ix *Index) buildTree(fl *Flame, per []int64, invert bool) {
	type node struct {
		fn       uint32
		total    int64
		self     int64
		children map[uint32]int
	}
	nodes := []node{{children: map[uint32]int{}}}
	for s, w := range per {
		if w == 0 {
			continue
		}
		fl.Total += w
		nodes[0].total += w
		frames := ix.Stacks.Frames(uint32(s))
		cur := 0
		for i := range frames {
			fr := frames[len(frames)-1-i] // root first
			if invert {
				fr = frames[i]
			}
			fn := ix.Stacks.Frame(fr).Func
			next, ok := nodes[cur].children[fn]
			if !ok {
				next = len(nodes)
				nodes = append(nodes, node{fn: fn, children: map[uint32]int{}})
				nodes[cur].children[fn] = next
			}
			nodes[next].total += w
			cur = next
		}
		nodes[cur].self += w
	}
	names := map[uint32]int32{}
	min := int64(float64(fl.Total) * MinShare)
	var out func(i int) *FlameNode
	out = func(i int) *FlameNode {
		n := &nodes[i]
		fn := &FlameNode{Name: -1, Total: n.total, Self: n.self}
		if i != 0 {
			id, ok := names[n.fn]
			if !ok {
				id = int32(len(fl.Names))
				fl.Names = append(fl.Names, ix.Stacks.Funcs[n.fn])
				names[n.fn] = id
			}
			fn.Name = id
		}
		fl.Nodes++
		for _, c := range n.children {
			if nodes[c].total < min || nodes[c].total == 0 {
				fl.Pruned++
				continue
			}
			fn.Children = append(fn.Children, out(c))
		}
		slices.SortFunc(fn.Children, func(a, b *FlameNode) int {
			if a.Total != b.Total {
				return cmp.Compare(b.Total, a.Total)
			}
			return strings.Compare(fl.Names[a.Name], fl.Names[b.Name])
		})
		return fn
	}
	fl.Root = out(0)
}
