package pprof

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/flightrec/flightrec/internal/jfrstack"
	"github.com/flightrec/flightrec/internal/quantity"
	"github.com/flightrec/flightrec/jfr"
)

// Input is one recording to read.
type Input struct {
	Name   string // the file name, for errors and comments
	Reader *jfr.Reader
}

// Options selects what goes into the profile.
type Options struct {
	// Types are the event types to include; by default the CPU samples
	// (DefaultTypes).
	Types []string
	// Weight names a numeric field that every selected type has; it adds
	// a sample type (FIELD/bytes, FIELD/nanoseconds or FIELD/count) and
	// becomes the default one.
	Weight string
	// Threads labels each sample with its thread ("thread").
	Threads bool
}

// DefaultTypes are the types exported when Options.Types is empty.
var DefaultTypes = []string{"jdk.ExecutionSample", "jdk.NativeMethodSample"}

// Kind is how an event type is valued.
type Kind int

// The kinds of event types.
const (
	KindOther Kind = iota
	KindCPU
	KindAlloc
	KindLock
)

// KindOf classifies an event type by name.
func KindOf(name string) Kind {
	switch name {
	case "jdk.ExecutionSample", "jdk.NativeMethodSample":
		return KindCPU
	case "jdk.ObjectAllocationSample", "jdk.ObjectAllocationInNewTLAB", "jdk.ObjectAllocationOutsideTLAB":
		return KindAlloc
	case "jdk.JavaMonitorEnter", "jdk.JavaMonitorWait", "jdk.ThreadPark":
		return KindLock
	}
	if strings.Contains(name, "Lock") {
		return KindLock
	}
	return KindOther
}

// Convert reads the inputs and returns their selected events as one
// profile. A read error stops it: the error names the file, chunk and
// offset.
func Convert(inputs []Input, opts Options) (*profile.Profile, error) {
	c := newConverter(opts)
	for i, in := range inputs {
		if err := c.read(i, in); err != nil {
			return nil, fmt.Errorf("%s: %w", in.Name, err)
		}
	}
	return c.build(inputs)
}

// column is one sample type.
type column struct{ typ, unit string }

// typePlan is how one event type (in one chunk's metadata) is read.
type typePlan struct {
	name    string
	kind    Kind
	stack   int
	thread  int
	class   int // the allocated class, for allocations
	value   quantity.Field
	valueOK bool
	weight  quantity.Field
	cols    [3]int // column of count, value, weight; -1 if none
}

type sampleKey struct {
	stack  uint32
	thread string
	typ    string
	file   int
}

type converter struct {
	opts    Options
	want    map[string]bool
	stacks  *jfrstack.Table
	plans   map[*jfr.Class]*typePlan
	byName  map[string]*typePlan // the first plan of each type name
	cols    []column
	colIdx  map[column]int
	samples map[sampleKey][]int64
	order   []sampleKey
	// periods holds each file's CPU sampling period per type, in ns.
	periods  []map[string]int64
	leaves   map[[2]uint32]uint32 // (stack, class func) -> stack with the class as leaf
	truncFn  uint32
	seen     map[string]bool // stack-carrying types seen, for the error when none matched
	start    int64
	end      int64
	weighted bool // some type had the weight field
}

func newConverter(opts Options) *converter {
	types := opts.Types
	if len(types) == 0 {
		types = DefaultTypes
	}
	c := &converter{
		opts:    opts,
		want:    map[string]bool{},
		stacks:  jfrstack.New(),
		plans:   map[*jfr.Class]*typePlan{},
		byName:  map[string]*typePlan{},
		colIdx:  map[column]int{},
		samples: map[sampleKey][]int64{},
		leaves:  map[[2]uint32]uint32{},
		seen:    map[string]bool{},
		start:   math.MaxInt64,
		end:     math.MinInt64,
	}
	for _, t := range types {
		c.want[t] = true
	}
	c.truncFn = c.stacks.FrameID(jfrstack.Frame{Func: c.stacks.FuncID("[truncated]")})
	return c
}

func (c *converter) column(typ, unit string) int {
	k := column{typ, unit}
	if i, ok := c.colIdx[k]; ok {
		return i
	}
	c.colIdx[k] = len(c.cols)
	c.cols = append(c.cols, k)
	return len(c.cols) - 1
}

func (c *converter) plan(cl *jfr.Class) *typePlan {
	if p, ok := c.plans[cl]; ok {
		return p
	}
	var p *typePlan
	if st := jfrstack.StackField(cl); st >= 0 {
		c.seen[cl.Name] = true
		if c.want[cl.Name] {
			p = c.newPlan(cl, st)
			if first := c.byName[cl.Name]; first == nil {
				c.byName[cl.Name] = p
			} else if first.cols[2] < 0 {
				first.cols[2] = p.cols[2]
			}
		}
	}
	c.plans[cl] = p
	return p
}

func (c *converter) newPlan(cl *jfr.Class, st int) *typePlan {
	p := &typePlan{name: cl.Name, kind: KindOf(cl.Name), stack: st, thread: jfrstack.ThreadField(cl), class: -1, cols: [3]int{-1, -1, -1}}
	switch p.kind {
	case KindCPU:
		p.cols[0], p.cols[1] = c.column("samples", "count"), c.column("cpu", "nanoseconds")
	case KindAlloc:
		p.cols[0], p.cols[1] = c.column("alloc_samples", "count"), c.column("alloc_space", "bytes")
		p.class = cl.FieldIndex("objectClass")
		for _, f := range []string{"weight", "tlabSize", "allocationSize"} {
			if q, ok := quantity.Of(cl, f); ok {
				p.value, p.valueOK = q, true
				break
			}
		}
	case KindLock:
		p.cols[0], p.cols[1] = c.column("contentions", "count"), c.column("delay", "nanoseconds")
		p.value, p.valueOK = quantity.Of(cl, "duration")
	default:
		p.cols[0] = c.column("events", "count")
		if q, ok := quantity.Of(cl, "duration"); ok {
			p.value, p.valueOK = q, true
			p.cols[1] = c.column("duration", "nanoseconds")
		}
	}
	if c.opts.Weight != "" {
		if q, ok := quantity.Of(cl, c.opts.Weight); ok {
			p.weight = q
			p.cols[2] = c.column(c.opts.Weight, string(q.Unit))
			c.weighted = true
		}
	}
	return p
}

func (c *converter) read(file int, in Input) error {
	c.periods = append(c.periods, map[string]int64{})
	var ev jfr.Event
	var chunk *jfr.Chunk
	for {
		err := in.Reader.ReadEvent(&ev)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if ev.Chunk != chunk {
			chunk = ev.Chunk
			h := &chunk.Header
			c.start = min(c.start, h.StartNanos)
			c.end = max(c.end, h.StartNanos+h.DurationNanos)
		}
		if ev.Type.Name == "jdk.ActiveSetting" {
			c.setting(file, &ev)
			continue
		}
		p := c.plan(ev.Type)
		if p == nil {
			continue
		}
		c.add(file, p, &ev)
	}
}

// setting notes the period of a CPU sample type.
func (c *converter) setting(file int, ev *jfr.Event) {
	name, _ := ev.Field("name")
	if jfrstack.Text(name) != "period" {
		return
	}
	id, _ := ev.Field("id")
	cl := ev.Chunk.Metadata.Class(id.Int())
	if cl == nil || KindOf(cl.Name) != KindCPU {
		return
	}
	val, _ := ev.Field("value")
	if d, ok := ParsePeriod(jfrstack.Text(val)); ok {
		if _, set := c.periods[file][cl.Name]; !set {
			c.periods[file][cl.Name] = d
		}
	}
}

// periodUnits are the nanoseconds in each unit of a period setting.
var periodUnits = map[string]float64{"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9, "d": 86400e9}

// ParsePeriod parses a JFR period setting ("20 ms", "10ms", "1 s") into
// nanoseconds; ok is false for "off", "everyChunk" and the like.
func ParsePeriod(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i <= 0 {
		return 0, false
	}
	n, err := strconv.ParseFloat(s[:i], 64)
	if err != nil {
		return 0, false
	}
	u, ok := periodUnits[strings.TrimSpace(s[i:])]
	if !ok || n <= 0 {
		return 0, false
	}
	return int64(n * u), true
}

func (c *converter) add(file int, p *typePlan, ev *jfr.Event) {
	st := c.stacks.Stack(ev, p.stack)
	if p.class >= 0 {
		st = c.withLeaf(st, jfrstack.ClassName(ev.Fields[p.class]))
	}
	k := sampleKey{stack: st, typ: p.name, file: file}
	if c.opts.Threads && p.thread >= 0 {
		k.thread = jfrstack.ThreadName(ev.Fields[p.thread])
	}
	vals := c.samples[k]
	if vals == nil {
		vals = make([]int64, 3)
		c.samples[k] = vals
		c.order = append(c.order, k)
	}
	vals[0]++
	if p.valueOK {
		vals[1] += p.value.Value(ev)
	}
	if p.cols[2] >= 0 {
		vals[2] += p.weight.Value(ev)
	}
}

// withLeaf returns stack st with a frame for the allocated class on top.
func (c *converter) withLeaf(st uint32, class string) uint32 {
	fn := c.stacks.FuncID(class)
	k := [2]uint32{st, fn}
	if id, ok := c.leaves[k]; ok {
		return id
	}
	frames := append([]uint32{c.stacks.FrameID(jfrstack.Frame{Func: fn})}, c.stacks.Frames(st)...)
	id := c.stacks.StackOf(frames, c.stacks.Truncated(st))
	c.leaves[k] = id
	return id
}

func (c *converter) build(inputs []Input) (*profile.Profile, error) {
	if len(c.samples) == 0 {
		return nil, c.noSamples()
	}
	if c.opts.Weight != "" && !c.weighted {
		return nil, fmt.Errorf("no selected event type has a numeric field %q", c.opts.Weight)
	}
	p := &profile.Profile{
		Mapping: []*profile.Mapping{{ID: 1, HasFunctions: true, HasFilenames: true, HasLineNumbers: true}},
	}
	for _, col := range c.cols {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: col.typ, Unit: col.unit})
	}
	p.DefaultSampleType = c.defaultType()
	if c.start != math.MaxInt64 {
		p.TimeNanos, p.DurationNanos = c.start, max(c.end-c.start, 0)
	}
	for _, in := range inputs {
		p.Comments = append(p.Comments, "flightrec export pprof "+in.Name)
	}
	c.addPeriod(p)
	locs := make([]*profile.Location, c.stacks.NumFrames())
	funcs := make([]*profile.Function, len(c.stacks.Funcs))
	loc := func(id uint32) *profile.Location {
		if l := locs[id]; l != nil {
			return l
		}
		f := c.stacks.Frame(id)
		fn := funcs[f.Func]
		if fn == nil {
			fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: c.stacks.Funcs[f.Func], SystemName: c.stacks.Funcs[f.Func]}
			funcs[f.Func] = fn
			p.Function = append(p.Function, fn)
		}
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: p.Mapping[0], Line: []profile.Line{{Function: fn, Line: int64(f.Line)}}}
		locs[id] = l
		p.Location = append(p.Location, l)
		return l
	}
	mixed := len(c.typesUsed()) > 1
	for _, k := range c.order {
		vals := c.samples[k]
		plan := c.byName[k.typ]
		s := &profile.Sample{Value: make([]int64, len(c.cols))}
		s.Value[plan.cols[0]] = vals[0]
		if plan.cols[1] >= 0 {
			v := vals[1]
			if plan.kind == KindCPU {
				v = vals[0] * c.period(k.file, k.typ)
			}
			s.Value[plan.cols[1]] = v
		}
		if plan.cols[2] >= 0 {
			s.Value[plan.cols[2]] = vals[2]
		}
		for _, f := range c.stacks.Frames(k.stack) {
			s.Location = append(s.Location, loc(f))
		}
		if c.stacks.Truncated(k.stack) || k.stack == 0 {
			s.Location = append(s.Location, loc(c.truncFn))
		}
		s.Label = map[string][]string{}
		if k.thread != "" {
			s.Label["thread"] = []string{k.thread}
		}
		if mixed {
			s.Label["type"] = []string{k.typ}
		}
		if len(inputs) > 1 {
			s.Label["file"] = []string{inputs[k.file].Name}
		}
		if len(s.Label) == 0 {
			s.Label = nil
		}
		p.Sample = append(p.Sample, s)
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("internal error: invalid profile: %w", err)
	}
	return p, nil
}

// defaultPeriod is the CPU sampling period assumed when a recording has
// no jdk.ActiveSetting for its sample type: the JDK's "default" preset.
const defaultPeriod = int64(20 * time.Millisecond)

func (c *converter) period(file int, typ string) int64 {
	if d, ok := c.periods[file][typ]; ok {
		return d
	}
	return defaultPeriod
}

// addPeriod sets the profile's period from the CPU samples' setting, and
// says in a comment when it had to be assumed.
func (c *converter) addPeriod(p *profile.Profile) {
	for _, k := range c.order {
		if KindOf(k.typ) != KindCPU {
			continue
		}
		p.PeriodType = &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
		p.Period = c.period(k.file, k.typ)
		if _, ok := c.periods[k.file][k.typ]; !ok {
			p.Comments = append(p.Comments, fmt.Sprintf("no period setting for %s: assumed %v", k.typ, time.Duration(defaultPeriod)))
		}
		return
	}
}

func (c *converter) defaultType() string {
	if c.opts.Weight != "" {
		return c.opts.Weight
	}
	for _, col := range c.cols {
		if col.unit != "count" {
			return col.typ
		}
	}
	return c.cols[0].typ
}

func (c *converter) typesUsed() map[string]bool {
	used := map[string]bool{}
	for _, k := range c.order {
		used[k.typ] = true
	}
	return used
}

func (c *converter) noSamples() error {
	types := c.opts.Types
	if len(types) == 0 {
		types = DefaultTypes
	}
	var have []string
	for t := range c.seen {
		have = append(have, t)
	}
	slices.Sort(have)
	if len(have) == 0 {
		return fmt.Errorf("no events of %s, and no event type with a stack trace", strings.Join(types, ", "))
	}
	return fmt.Errorf("no events of %s; event types with stack traces: %s", strings.Join(types, ", "), strings.Join(have, ", "))
}
