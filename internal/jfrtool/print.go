package jfrtool

import (
	"errors"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/flightrec/flightrec/internal/mmapfile"
	"github.com/flightrec/flightrec/jfr"
)

// PrintOptions selects and shapes what Print writes.
type PrintOptions struct {
	// Events and Categories are jfr's --events and --categories filters:
	// comma-separated, case-sensitive globs (* and ?). An event type is
	// printed if it matches either; with neither, every event is printed.
	Events, Categories string
	// StackDepth is the number of stack frames printed per stack trace
	// (jfr's --stack-depth, default 5).
	StackDepth int
}

// Format is an output format of Print.
type Format int

// The formats of `jfr print`.
const (
	FormatPretty    Format = iota // jfr print
	FormatJSON                    // jfr print --json
	FormatJSONLines               // each event's JSON object on a line of its own
)

// Print writes the events of the recording read by r as `jfr print` does,
// chunk by chunk: a chunk's selected events sorted by end time (stably).
// Only one chunk's events are held, as record positions; each is decoded
// again when printed. On a format error, every complete chunk before it
// has been written and the error is returned.
func Print(w io.Writer, r *jfr.Reader, f Format, opts PrintOptions) error {
	p := &printer{w: w, opts: opts, filter: newFilter(opts.Events, opts.Categories)}
	p.out = make([]byte, 0, outBuffer+outBuffer/2)
	p.format = f
	em := newEmitter(p, f)
	em.begin()
	err := p.run(r, em)
	em.end()
	if ferr := p.flush(); err == nil {
		err = ferr
	}
	return err
}

// outBuffer is how much output is gathered before it is written.
const outBuffer = 1 << 20

// emitter renders events in one format.
type emitter interface {
	begin()
	chunk(c *jfr.Chunk)
	event(ev *jfr.Event)
	end()
	// count and setCount give the number of events written so far (JSON
	// separates events by commas).
	count() int
	setCount(n int)
}

func newEmitter(p *printer, f Format) emitter {
	if f == FormatJSON {
		return &jsonPrinter{printer: p}
	}
	if f == FormatJSONLines {
		return &jsonLinesPrinter{jsonPrinter: jsonPrinter{printer: p, compact: true}}
	}
	return &prettyPrinter{printer: p}
}

// printer holds what both formats share: output buffer, filter, per-chunk
// record list and the per-class plans.
type printer struct {
	w      io.Writer
	werr   error
	out    []byte
	opts   PrintOptions
	format Format
	filter *filter

	recs    []sortRec
	sortTmp []sortRec // sortByEnd's scratch
	batch   [512]jfr.Record
	md      *jfr.Metadata
	plans   map[*jfr.Class]*classPlan
	chunk   *jfr.Chunk
	// Clock of the chunk being printed, as jfr's TimeConverter has it.
	startNanos, startTicks int64
	divisor                float64
	offset                 int // seconds east of UTC
}

type sortRec struct {
	end int64
	rec jfr.Record
}

func (p *printer) flush() error {
	if len(p.out) > 0 && p.werr == nil {
		_, p.werr = p.w.Write(p.out)
	}
	p.out = p.out[:0]
	return p.werr
}

// maybeFlush writes the buffer out once it is large; called between events
// so cached renders can refer to bytes of the current event.
func (p *printer) maybeFlush() {
	if len(p.out) >= outBuffer {
		p.flush()
	}
}

func (p *printer) run(r *jfr.Reader, em emitter) error {
	for {
		c, err := r.NextChunk()
		if errors.Is(err, io.EOF) {
			return p.werr
		}
		if err != nil {
			return err
		}
		if p.werr != nil {
			return p.werr
		}
		p.setChunk(c)
		p.recs = p.recs[:0]
		if err := p.printChunk(c, em, p.collect(r, c)); err != nil {
			return err
		}
	}
}

// collect adds to p.recs the selected events of the rest of r's chunk c,
// and returns the error that stopped the walk.
func (p *printer) collect(r *jfr.Reader, c *jfr.Chunk) error {
	for !r.ChunkDone() {
		n, err := r.ReadRecords(p.batch[:])
		for _, rec := range p.batch[:n] {
			if rec.TypeID == 0 || rec.TypeID == 1 {
				continue
			}
			if cl := c.Metadata.Class(rec.TypeID); cl != nil && p.filter.accept(cl) {
				p.recs = append(p.recs, sortRec{rec: rec})
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// printChunk prints the events of c in p.recs, sorted by end time; walkErr
// is the error that ended their collection, returned after the events
// before it are decoded.
func (p *printer) printChunk(c *jfr.Chunk, em emitter, walkErr error) error {
	// Like jfr, decode every event of the chunk before printing any:
	// a corrupt event fails the chunk before its events are printed.
	// An event before a broken record fails first, as it is earlier.
	if err := endTimes(c, p.recs, min(runtime.GOMAXPROCS(0), maxWorkers)); err != nil {
		return err
	}
	if walkErr != nil {
		return walkErr
	}
	// jfr sorts a chunk's events by end time with a stable sort; the
	// records were collected in file order.
	p.recs, p.sortTmp = sortByEnd(p.recs, p.sortTmp)
	if workers := min(runtime.GOMAXPROCS(0), maxWorkers); workers > 1 && len(p.recs) >= 4*batchEvents {
		return p.renderParallel(c, em, workers)
	}
	em.chunk(c)
	var ev jfr.Event
	for i := range p.recs {
		if err := c.DecodeEvent(p.recs[i].rec, &ev); err != nil {
			return err
		}
		em.event(&ev)
		p.maybeFlush()
	}
	return nil
}

// PartPrinter prints a chunk read in parts, as `ctl stream` gets them:
// the records each flush added that the stream sends
// (jfr.LiveChunk.Reader reads each part).
type PartPrinter struct {
	p  *printer
	em emitter
}

// NewPartPrinter returns a PartPrinter writing to w in format f, which
// is FormatPretty or FormatJSONLines (FormatJSON's document has no end
// here).
func NewPartPrinter(w io.Writer, f Format, opts PrintOptions) *PartPrinter {
	p := &printer{w: w, opts: opts, filter: newFilter(opts.Events, opts.Categories), format: f}
	em := newEmitter(p, f)
	em.begin()
	return &PartPrinter{p: p, em: em}
}

// Print writes the selected events the readers read, all of them records
// of chunk c, as Print writes a chunk's: sorted together by end time.
func (pp *PartPrinter) Print(c *jfr.Chunk, parts ...*jfr.Reader) error {
	p := pp.p
	p.setChunk(c)
	p.recs = p.recs[:0]
	var walkErr error
	for _, r := range parts {
		if _, err := r.NextChunk(); err != nil {
			if errors.Is(err, io.EOF) {
				continue
			}
			walkErr = err
			break
		}
		if walkErr = p.collect(r, c); walkErr != nil {
			break
		}
	}
	err := p.printChunk(c, pp.em, walkErr)
	if ferr := p.flush(); err == nil {
		err = ferr
	}
	return err
}

// Parallel rendering of a large chunk: batches of sorted events go round
// robin to workers, each with its own caches, and are written in order.
const (
	batchEvents = 256
	maxWorkers  = 4
)

// renderParallel renders p.recs with several workers. At most three
// output buffers per worker are in flight, so memory stays bounded.
func (p *printer) renderParallel(c *jfr.Chunk, em emitter, workers int) error {
	type result struct {
		b   []byte
		err error
	}
	nb := (len(p.recs) + batchEvents - 1) / batchEvents
	base := em.count()
	done := make([]chan result, workers)
	free := make([]chan []byte, workers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		done[w] = make(chan result, 2)
		free[w] = make(chan []byte, 3)
		for range 3 {
			free[w] <- make([]byte, 0, 4<<20)
		}
		wp := &printer{opts: p.opts, filter: newFilter("", "")}
		wp.setChunk(c)
		wem := newEmitter(wp, p.format)
		wem.chunk(c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ev jfr.Event
			for b := w; b < nb; b += workers {
				select {
				case wp.out = <-free[w]:
				case <-stop:
					return
				}
				wp.out = wp.out[:0]
				wem.setCount(base + b*batchEvents)
				// The recording may be a mapped file, which faults if
				// it shrinks: an error, not a crash.
				err := mmapfile.Protect(func() error {
					for i := b * batchEvents; i < min((b+1)*batchEvents, len(p.recs)); i++ {
						if err := c.DecodeEvent(p.recs[i].rec, &ev); err != nil {
							return err
						}
						wem.event(&ev)
					}
					return nil
				})
				select {
				case done[w] <- result{wp.out, err}:
				case <-stop:
					return
				}
			}
		}()
	}
	defer wg.Wait()
	defer close(stop)
	if err := p.flush(); err != nil {
		return err
	}
	for b := range nb {
		r := <-done[b%workers]
		if r.err != nil {
			return r.err
		}
		if _, err := p.w.Write(r.b); err != nil {
			p.werr = err
			return err
		}
		free[b%workers] <- r.b
	}
	em.setCount(base + len(p.recs))
	return nil
}

func (p *printer) setChunk(c *jfr.Chunk) {
	p.chunk = c
	if c.Metadata != p.md {
		p.md = c.Metadata
		p.plans = make(map[*jfr.Class]*classPlan)
		p.filter.reset()
	}
	// jfr converts the ticks of every chunk with the first chunk's
	// header (verified on a multi-chunk recording), as Chunk.Clock does.
	ck := c.Clock()
	p.startNanos, p.startTicks = ck.StartNanos, ck.StartTicks
	p.divisor = float64(ck.TicksPerSecond) / 1e9
	p.offset = 0
	for _, a := range c.Metadata.Region {
		if a.Key == "gmtOffset" {
			if ms, err := strconv.ParseInt(a.Value, 10, 64); err == nil {
				if s := ms / 1000; s >= -18*3600 && s <= 18*3600 {
					p.offset = int(s)
				}
			}
		}
	}
}

// timestampNanos converts a tick timestamp to epoch nanoseconds as jfr
// does: double division, truncating and saturating cast, wrapping add.
func (p *printer) timestampNanos(ticks int64) int64 {
	return p.startNanos + saturatingInt64(float64(ticks-p.startTicks)/p.divisor)
}

// Field conversions decided by annotations.
const (
	convNone = iota
	convTimespan
	convTimestamp
)

// Units of Timespan and Timestamp.
const (
	unitTicks = iota
	unitNanos
	unitMicros
	unitMillis
	unitSeconds
	unitEpochMillis
	unitUnknown
)

// Pretty content types (first match wins, in jfr's order after the
// Duration and timestamp cases).
const (
	ctNone = iota
	ctPercentage
	ctBytes
	ctBits
	ctBytesPerSecond
	ctBitsPerSecond
	ctAddress
	ctFrequency
)

// Shapes of a field's values.
const (
	shapeScalar = iota
	shapeStruct
	shapeArray
)

// classPlan is how the fields of one class are printed.
type classPlan struct {
	class  *jfr.Class
	fields []fieldPlan
	kind   int // pretty special rendering of the class (kindThread...)
}

type fieldPlan struct {
	f         *jfr.Field
	jsonName  []byte // indentation not included: "name":
	shape     int    // of the field (array, struct, scalar)
	elemShape int    // of one element, for arrays
	frames    bool   // array of stack frames: cut at StackDepth
	conv      int
	unit      int
	content   int  // pretty formatting
	hasCT     bool // the field has some content-type annotation
	skipTop   int  // pretty: 1 eventThread/stackTrace, 2 duration
}

// isSimple tells whether jfr flattens values of c to their only field.
func isSimple(c *jfr.Class) bool {
	return c != nil && len(c.Fields) == 1 && c.SuperType == ""
}

func shapeOf(c *jfr.Class) int {
	if c == nil || len(c.Fields) == 0 || isSimple(c) {
		return shapeScalar
	}
	return shapeStruct
}

func (p *printer) plan(c *jfr.Class) *classPlan {
	if cp := p.plans[c]; cp != nil {
		return cp
	}
	cp := &classPlan{class: c, fields: make([]fieldPlan, len(c.Fields))}
	p.plans[c] = cp
	cp.kind = classKind(c.Name)
	for i := range c.Fields {
		f := &c.Fields[i]
		fp := &cp.fields[i]
		fp.f = f
		fp.jsonName = appendJSONString(nil, f.Name)
		fp.jsonName = append(fp.jsonName, ": "...)
		fp.elemShape = shapeOf(f.Type)
		fp.shape = fp.elemShape
		if f.Array {
			fp.shape = shapeArray
			fp.frames = f.Type != nil && (f.Type.Name == "jdk.types.StackFrame" || f.Type.Name == "com.oracle.jfr.types.StackFrame")
		}
		if a, ok := f.Annotation("jdk.jfr.Timespan"); ok {
			fp.conv = convTimespan
			fp.unit = unitOf(a.Value())
		} else if a, ok := f.Annotation("jdk.jfr.Timestamp"); ok {
			fp.conv = convTimestamp
			fp.unit = unitOf(a.Value())
		}
		_, fp.hasCT = f.ContentType()
		_, freq := f.Annotation("jdk.jfr.Frequency")
		if _, ok := f.Annotation("jdk.jfr.Percentage"); ok && fp.hasCT {
			fp.content = ctPercentage
		} else if a, ok := f.Annotation("jdk.jfr.DataAmount"); ok && fp.hasCT && (a.Value() == "BYTES" || a.Value() == "BITS") {
			switch {
			case freq && a.Value() == "BYTES":
				fp.content = ctBytesPerSecond
			case freq:
				fp.content = ctBitsPerSecond
			case a.Value() == "BYTES":
				fp.content = ctBytes
			default:
				fp.content = ctBits
			}
		} else if _, ok := f.Annotation("jdk.jfr.MemoryAddress"); ok && fp.hasCT {
			fp.content = ctAddress
		} else if freq && fp.hasCT {
			fp.content = ctFrequency
		}
		switch f.Name {
		case "eventThread", "stackTrace":
			fp.skipTop = 1
		case "duration":
			fp.skipTop = 2
		}
	}
	return cp
}

func unitOf(s string) int {
	switch s {
	case "TICKS":
		return unitTicks
	case "NANOSECONDS":
		return unitNanos
	case "MICROSECONDS":
		return unitMicros
	case "MILLISECONDS":
		return unitMillis
	case "SECONDS":
		return unitSeconds
	case "MILLISECONDS_SINCE_EPOCH":
		return unitEpochMillis
	}
	return unitUnknown
}

// duration converts a Timespan field value to a java.time.Duration.
func (p *printer) duration(raw int64, unit int) Duration {
	if raw == math.MinInt64 {
		return minDuration
	}
	switch unit {
	case unitNanos:
		return durationOfNanos(raw)
	case unitMicros:
		return durationOfNanos(raw * 1000)
	case unitMillis:
		return Duration{floorDiv(raw, 1000), int32((raw - floorDiv(raw, 1000)*1000) * 1e6)}
	case unitSeconds:
		return Duration{raw, 0}
	}
	return durationOfNanos(saturatingInt64(float64(raw) / p.divisor))
}

// timestamp converts a Timestamp field value to epoch nanoseconds; ok is
// false for the Long.MIN_VALUE sentinel.
func (p *printer) timestamp(raw int64, unit int) (int64, bool) {
	if raw == math.MinInt64 {
		return 0, false
	}
	if unit == unitEpochMillis {
		return raw * 1e6, true
	}
	return p.timestampNanos(raw), true
}

// deref resolves references and flattens simple types (a struct with one
// field and no supertype is printed as that field's value).
func deref(v jfr.Value) jfr.Value {
	for range maxDepth {
		switch v.Kind() {
		case jfr.KindRef:
			v = v.Resolve()
		case jfr.KindString:
			if v.Encoding() == 2 {
				return v.Resolve()
			}
			return v
		case jfr.KindStruct:
			if isSimple(v.Class()) && v.Len() == 1 {
				v = v.Index(0)
				continue
			}
			return v
		default:
			return v
		}
	}
	return jfr.Null()
}

// maxDepth bounds how deeply values are rendered: constant pools can refer
// to each other in cycles. Deeper values print as null (N/A).
const maxDepth = 64

// filter implements --events and --categories.
type filter struct {
	events, categories []string
	cache              map[*jfr.Class]bool
}

func newFilter(events, categories string) *filter {
	return &filter{events: splitFilter(events), categories: splitFilter(categories), cache: map[*jfr.Class]bool{}}
}

func splitFilter(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func (f *filter) reset() { clear(f.cache) }

func (f *filter) accept(c *jfr.Class) bool {
	if len(f.events) == 0 && len(f.categories) == 0 {
		return true
	}
	ok, seen := f.cache[c]
	if !seen {
		ok = f.match(c)
		f.cache[c] = ok
	}
	return ok
}

// Accept tells whether the filter selects event type c (for metadata).
func (f *filter) match(c *jfr.Class) bool {
	short := c.Name[strings.LastIndexByte(c.Name, '.')+1:]
	for _, g := range f.events {
		if glob(g, c.Name) || glob(g, short) {
			return true
		}
	}
	if len(f.categories) > 0 {
		if a, ok := c.Annotation("jdk.jfr.Category"); ok {
			for _, kv := range a.Values {
				for _, g := range f.categories {
					if glob(g, kv.Value) || (strings.Contains(kv.Value, " ") && acronym(kv.Value) == g) {
						return true
					}
				}
			}
		}
	}
	return false
}

// acronym is the upper-case letters that start a word of s.
func acronym(s string) string {
	var b []byte
	prevSpace := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if prevSpace && c >= 'A' && c <= 'Z' {
			b = append(b, c)
		}
		prevSpace = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
	}
	return string(b)
}

// glob matches s against pattern with * (any run) and ? (one character).
func glob(pattern, s string) bool {
	px, sx := 0, 0
	nextPx, nextSx := -1, -1
	pr, sr := []rune(pattern), []rune(s)
	for px < len(pr) || sx < len(sr) {
		if px < len(pr) {
			switch c := pr[px]; c {
			case '*':
				nextPx, nextSx = px, sx+1
				px++
				continue
			case '?':
				if sx < len(sr) {
					px++
					sx++
					continue
				}
			default:
				if sx < len(sr) && sr[sx] == c {
					px++
					sx++
					continue
				}
			}
		}
		if nextSx > 0 && nextSx <= len(sr) {
			px, sx = nextPx, nextSx
			continue
		}
		return false
	}
	return true
}
