package flow

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/flightrec/flightrec/internal/flowspec"
	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/jfr"
)

// jfrSource reads the flow events of a flightrec recording. Events carry
// the number of their span; a span is delivered once its span record
// (flowspec.SpanEvent) has been read and the chunk after the record's has
// ended too: the recorder writes its per-P buffers one after the other, so
// an event committed before the span record on another P may follow the
// record in the file, in the same chunk or (when the flusher took that P's
// buffer first) in the next one. A span closed by its record waits in
// held (heldqueue.go), encoded, most of it in a temporary file, until the
// chunk after its record's has been read; an event that comes for it
// meanwhile goes to a late span under its number (open), joined to it when
// it leaves. Only the spans still open are held in memory as jfrSpans.
type jfrSource struct {
	name     string
	r        *jfr.Reader
	c        io.Closer
	nodeName string
	open     openSpans // spans without a record, and late spans
	free     []*jfrSpan
	slab     []jfrSpan // spans allocated in blocks, taken one by one
	held     heldQueue // closed spans in record order: flags, varint number, buf
	heldNums heldNums  // their numbers
	// heldChunks are the chunk indexes of their records, in runs.
	heldChunks []chunkRun
	pushed     int // spans closed so far
	popped     int // closed spans delivered so far
	// The closed spans before the truncatedUpTo'th may have lost events
	// to damage.
	truncatedUpTo int
	head          []byte      // the flags and number of a span going to held
	clocks        []jfr.Clock // by chunk index
	scratch       []byte
	outs          [][]byte      // the outgoing IDs of the span being delivered
	ids           []bufRange    // closeSpan's outgoing IDs in scratch
	one           spanBatch     // next's span
	recent        [8]threadName // the threads seen last, the first nrecent valid
	nrecent       int
	classes       map[*jfr.Class]*jfrClass
	// byType caches classes by type ID: flow events of a few types
	// alternate, so one last class missed at most events and the map,
	// keyed by the class, cost as much as reading the record.
	byType   []typeClass
	fv       jfrFields // the fields of s.ev
	generic  bool      // decode every record with the generic decoder (tests)
	thr      map[string]uint32
	thrNames []string
	bad      int
	ordinal  uint32
	seq      uint32
	ev       jfr.Event
	pending  bool // s.ev is read but not processed yet

	damage []error // damaged chunks the reader skipped
	// Once the reader is done (ended), the spans still held are delivered,
	// then endErr (io.EOF, or the error that stopped the reading).
	ended    bool
	endErr   error
	leftover []*jfrSpan // spans never closed, in span order, delivered last
	leftOut  bool       // leftover is filled
	// Spans numbered up to damagedUpTo existed when a chunk was damaged
	// and may have lost events in it.
	damagedUpTo int64
	maxNum      int64
	nodeNumber  int64 // from the node event, -1 unknown
	nodeErr     error // the recording holds more than one node
	// bounded: the merge has a memory budget, so held spans that cannot
	// go to their temporary file end the input (memErr, fatal) instead
	// of staying in memory (memErr, memoryWarning).
	bounded bool
	memErr  error
}

// chunkRun is a number of consecutive closed spans whose records are in
// one chunk.
type chunkRun struct {
	chunk int
	n     int
}

// jfrSpan is a span being read: open (no record yet), a late span (events
// read for a closed span that still waits), or the span being delivered.
// It keeps its events and its record encoded in buf (next,
// closeSpan), 120 bytes with room inline for a record and three events
// with compact IDs; a larger span's buf grows out of the inline array.
type jfrSpan struct {
	num        int64
	buf        []byte
	truncated  bool // events of the span may be lost to damage
	unfinished bool // no span record: the span was open when recording stopped
	nonCausal  bool
	outField   bool // the record has an outgoing array field
	late       bool // events for the closed span of this number, which waits in held
	inline     [80]byte
}

// Flags of a closed span in the held queue.
const (
	heldTruncated = 1 << iota
	heldNonCausal
	heldOutField
)

// Entries of jfrSpan.buf. An event: its kind + 1, then uvarint thread,
// uvarint chunk index, varint ticks since the chunk's start, the message ID and the text (each
// uvarint length, 0 for none, and bytes). The span record: 0, the
// incoming message ID, uvarint count and the outgoing IDs.
const recordEntry = 0

// bufRange locates bytes in a buffer: start and end.
type bufRange [2]uint32

func span32(start, end int) bufRange { return bufRange{uint32(start), uint32(end)} }

// typeClass is a class of the chunk's metadata and its jfrClass.
type typeClass struct {
	cl *jfr.Class
	jc *jfrClass
}

// byTypeMax bounds the type IDs cached by ID; JFR numbers types from 0
// up, a few hundred of them.
const byTypeMax = 1 << 12

// jfrClass caches the field indexes of one flow event type.
type jfrClass struct {
	kind                               flowspec.Kind
	span, thread, msg, msgText, text   int
	isSpan, isNode                     bool
	nonCausal, in, inText, out, outTxt int
	name, number                       int
	key                                int
	ops                                []fieldOp // nil: the generic decoder decodes the class
}

// newJFRSource returns the reader of a recording; the spans it holds
// wait in a temporary file in dir ("" for os.TempDir()).
func newJFRSource(name string, r io.Reader, c io.Closer, dir string) *jfrSource {
	return &jfrSource{
		name: name, r: jfr.NewReader(r, nil), c: c, held: newHeldQueue(dir),
		classes: make(map[*jfr.Class]*jfrClass),
		thr:     make(map[string]uint32), nodeNumber: -1,
	}
}

var eventByName = func() map[string]flowspec.EventType {
	m := make(map[string]flowspec.EventType)
	for _, e := range flowspec.Events {
		m[e.Name] = e
	}
	return m
}()

func (s *jfrSource) class(c *jfr.Class) *jfrClass {
	id := c.ID
	if uint64(id) < uint64(len(s.byType)) && s.byType[id].cl == c {
		return s.byType[id].jc
	}
	jc, ok := s.classes[c]
	if !ok {
		jc = s.newClass(c)
		s.classes[c] = jc
	}
	if uint64(id) < byTypeMax {
		if int(id) >= len(s.byType) {
			s.byType = append(s.byType, make([]typeClass, int(id)+1-len(s.byType))...)
		}
		s.byType[id] = typeClass{c, jc}
	}
	return jc
}

func (s *jfrSource) newClass(c *jfr.Class) *jfrClass {
	var jc *jfrClass
	if et, ok := eventByName[c.Name]; ok {
		jc = &jfrClass{
			kind: et.Kind, span: c.FieldIndex(flowspec.FieldSpan), thread: c.FieldIndex(flowspec.FieldThread),
			msg: c.FieldIndex(flowspec.FieldMessage), msgText: c.FieldIndex(flowspec.FieldMessageText),
			text:   c.FieldIndex(flowspec.FieldText),
			isSpan: et.Name == flowspec.SpanEvent, isNode: et.Name == flowspec.NodeEvent,
			nonCausal: c.FieldIndex(flowspec.FieldNonCausal), in: c.FieldIndex(flowspec.FieldIncoming),
			inText: c.FieldIndex(flowspec.FieldIncomingText), out: c.FieldIndex(flowspec.FieldOutgoing),
			outTxt: c.FieldIndex(flowspec.FieldOutgoingText), name: c.FieldIndex(flowspec.FieldNodeName),
			number: c.FieldIndex(flowspec.FieldNodeNumber), key: c.FieldIndex(flowspec.FieldKey),
		}
		if ops, ok := fieldOps(c); ok {
			jc.ops = ops
		}
	}
	return jc
}

// decode decodes the fields of s.ev into s.fv: itself when it knows the
// layout, else with the generic decoder, whose error (a malformed record)
// it returns.
func (s *jfrSource) decode(jc *jfrClass) error {
	if jc.ops != nil && !s.generic && s.fv.decodeRaw(s.ev.Raw(), jc.ops, s.ev.Chunk) {
		return nil
	}
	if err := s.r.LoadEvent(&s.ev); err != nil {
		return err
	}
	s.fv.fromValues(s.ev.Fields, len(s.ev.Type.Fields))
	return nil
}

func (s *jfrSource) node() string {
	if s.nodeName != "" {
		return s.nodeName
	}
	return nodeNameOf(s.name)
}
func (s *jfrSource) threads() []string { return s.thrNames }
func (s *jfrSource) damaged() []error  { return s.damage }
func (s *jfrSource) number() int64     { return s.nodeNumber }
func (s *jfrSource) corrected() bool   { return false }
func (s *jfrSource) warnings() int     { return s.bad }

func (s *jfrSource) fatal() error {
	if s.bounded {
		return errors.Join(s.nodeErr, s.memErr)
	}
	return s.nodeErr
}

func (s *jfrSource) memoryWarning() error {
	if s.bounded {
		return nil
	}
	return s.memErr
}

func (s *jfrSource) Close() error {
	s.held.close()
	return s.c.Close()
}

// appendID appends, in wire form (ids.go), a message ID held in a long
// and a String field: the String wins when it is not null.
func appendID(dst []byte, f *jfrFields, num, text int) []byte {
	if !f.isNull(text) {
		// An empty text is no ID: event.Define writes "" for an unset
		// string field, not null.
		if t := f.str(text); len(t) > 0 {
			return appendWireText(dst, t)
		}
	}
	if num >= 0 {
		if id := f.ints[num]; id != 0 {
			return appendWireID(dst, id)
		}
	}
	return dst
}

// AppendCompactID appends the text form "node:counter" of a compact ID.
func AppendCompactID(dst []byte, id int64) []byte {
	n, c := flowspec.SplitMessageID(id)
	dst = strconv.AppendUint(dst, uint64(n), 10)
	dst = append(dst, ':')
	return strconv.AppendUint(dst, c, 10)
}

// next reads the next span into sp, its slices valid until the next
// call: nextInto's, in a batch of one.
func (s *jfrSource) next(sp *rawSpan) error {
	s.one.reset()
	if err := s.nextInto(&s.one); err != nil {
		return err
	}
	*sp = s.one.spans[0]
	return nil
}

// nextInto appends the next span to b, its bytes, events and outgoing
// IDs in b's own arrays (batchSource): a closed span is popped from the
// held queue straight into b.bytes and decoded in place, so that the
// read-ahead does not copy it again.
func (s *jfrSource) nextInto(b *spanBatch) error {
	for {
		if s.ended {
			if s.held.n > 0 {
				return s.deliverClosed(b)
			}
			if !s.leftOut {
				s.takeLeftovers()
			}
			if len(s.leftover) > 0 {
				js := s.leftover[0]
				s.leftover = s.leftover[1:]
				start := len(b.bytes)
				b.bytes = append(b.bytes, js.buf...)
				s.free = append(s.free, js)
				s.deliver(b, b.bytes[start:], js.truncated, js.nonCausal, js.outField, true)
				return nil
			}
			return s.endErr
		}
		if !s.pending {
			err := s.r.ReadEventLazy(&s.ev)
			if errors.Is(err, io.EOF) {
				s.end(io.EOF)
				continue
			}
			if err != nil {
				s.readError(err)
				continue
			}
		}
		s.pending = false
		if len(s.heldChunks) > 0 && s.ev.Chunk.Index >= s.heldChunks[0].chunk+2 {
			s.pending = true
			return s.deliverClosed(b)
		}
		jc := s.class(s.ev.Type)
		if jc == nil {
			continue
		}
		if err := s.decode(jc); err != nil {
			s.readError(err)
			continue
		}
		f := &s.fv
		if jc.isNode {
			s.nodeEvent(f, jc)
			continue
		}
		if jc.span < 0 {
			s.bad++
			continue
		}
		num := f.ints[jc.span]
		js := s.open.get(num)
		// Closed spans have numbers up to maxNum.
		closed := js == nil && num <= s.maxNum && s.heldNums.has(num)
		if jc.isSpan {
			if closed || js != nil && js.late {
				s.bad++ // a second record for the span
				continue
			}
			if js == nil {
				js = s.newSpan(num)
			}
			s.closeSpan(js, f, jc)
			s.hold(js, s.ev.Chunk.Index)
			continue
		}
		if js == nil {
			js = s.newSpan(num)
			js.late = closed
			s.open.put(js)
		}
		ci := s.ev.Chunk.Index
		if ci >= len(s.clocks) {
			h := &s.ev.Chunk.Header
			s.clocks = append(s.clocks, make([]jfr.Clock, ci+1-len(s.clocks))...)
			s.clocks[ci] = jfr.Clock{StartNanos: h.StartNanos, StartTicks: h.StartTicks, TicksPerSecond: max(h.TicksPerSecond, 1)}
		}
		b := append(js.buf, byte(jc.kind)+1)
		b = binary.AppendUvarint(b, uint64(s.threadID(f.str(jc.thread))))
		b = binary.AppendUvarint(b, uint64(ci))
		// Like the JDK, the start is the first field, whatever its name.
		b = binary.AppendVarint(b, f.ints[0]-s.clocks[ci].StartTicks)
		s.scratch = appendID(s.scratch[:0], f, jc.msg, jc.msgText)
		b = appendEntryBytes(b, s.scratch)
		s.scratch = s.scratch[:0]
		if !f.isNull(jc.key) {
			s.scratch = append(s.scratch, f.str(jc.key)...)
			s.scratch = append(s.scratch, '=')
		}
		if !f.isNull(jc.text) {
			s.scratch = append(s.scratch, f.str(jc.text)...)
		}
		js.buf = appendEntryBytes(b, s.scratch)
	}
}

// newSpan returns an empty span numbered num, not yet in open.
func (s *jfrSource) newSpan(num int64) *jfrSpan {
	var js *jfrSpan
	if n := len(s.free); n > 0 {
		js = s.free[n-1]
		s.free = s.free[:n-1]
		js.buf = js.buf[:0]
	} else {
		if len(s.slab) == 0 {
			s.slab = make([]jfrSpan, 64)
		}
		js = &s.slab[0]
		s.slab = s.slab[1:]
		js.buf = js.inline[:0]
	}
	js.num = num
	js.truncated = num <= s.damagedUpTo
	js.unfinished, js.nonCausal, js.outField, js.late = false, false, false, false
	s.maxNum = max(s.maxNum, num)
	return js
}

// hold moves a span closed by its record in chunk ci to the held queue.
func (s *jfrSource) hold(js *jfrSpan, ci int) {
	var flags byte
	if js.truncated {
		flags |= heldTruncated
	}
	if js.nonCausal {
		flags |= heldNonCausal
	}
	if js.outField {
		flags |= heldOutField
	}
	s.head = binary.AppendVarint(append(s.head[:0], flags), js.num)
	s.held.push(s.head, js.buf)
	if s.held.fileErr != nil && s.memErr == nil {
		if s.bounded {
			s.memErr = fmt.Errorf("%s: the memory budget cannot be kept: %w", s.name, s.held.fileErr)
			s.end(s.memErr)
		} else {
			s.memErr = fmt.Errorf("%s: %w: the held spans stay in memory", s.name, s.held.fileErr)
		}
	}
	s.heldNums.add(js.num)
	if n := len(s.heldChunks); n > 0 && s.heldChunks[n-1].chunk == ci {
		s.heldChunks[n-1].n++
	} else {
		s.heldChunks = append(s.heldChunks, chunkRun{ci, 1})
	}
	s.pushed++
	s.open.remove(js)
	s.free = append(s.free, js)
}

// readError handles an error of the reader: damage it can skip to the next
// chunk after, or the end of the recording.
func (s *jfrSource) readError(err error) {
	err = fmt.Errorf("%s: %w", s.name, err)
	// Every span held may have lost events in the damaged part.
	s.truncatedUpTo = s.pushed
	s.open.each(func(js *jfrSpan) { js.truncated = true })
	s.damagedUpTo = s.maxNum
	if s.r.SkipDamagedChunk() {
		s.damage = append(s.damage, err)
		return
	}
	s.end(err)
}

// appendEntryBytes appends p with its length before it.
func appendEntryBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// threadName is a thread's name and index, as the reader saw it lately.
type threadName struct {
	name string
	id   uint32
}

// threadID returns the index of a thread's name. Events come from few
// threads at a time: the last ones seen are compared before the map.
func (s *jfrSource) threadID(th []byte) uint32 {
	for i := range s.nrecent {
		if r := &s.recent[i]; r.name == string(th) {
			if i > 0 {
				s.recent[0], s.recent[i] = s.recent[i], s.recent[0]
			}
			return s.recent[0].id
		}
	}
	id, ok := s.thr[string(th)]
	if !ok {
		id = uint32(len(s.thrNames))
		s.thr[string(th)] = id
		s.thrNames = append(s.thrNames, string(th))
	}
	copy(s.recent[1:], s.recent[:len(s.recent)-1])
	s.recent[0] = threadName{s.thrNames[id], id}
	s.nrecent = min(s.nrecent+1, len(s.recent))
	return id
}

// nodeEvent takes the node's name and number from its node event. Two
// different nodes in one recording cannot be told apart (their spans share
// numbers), so the recording is refused.
func (s *jfrSource) nodeEvent(f *jfrFields, jc *jfrClass) {
	name := ""
	if !f.isNull(jc.name) {
		name = string(f.str(jc.name))
	}
	num := int64(-1)
	if !f.isNull(jc.number) {
		num = f.ints[jc.number]
	}
	if (s.nodeName != "" && name != "" && name != s.nodeName) || (s.nodeNumber >= 0 && num >= 0 && num != s.nodeNumber) {
		if s.nodeErr == nil {
			s.nodeErr = fmt.Errorf("%s: holds two flow nodes (%s and %s): record one node per process, one recording per node", s.name,
				nodeLabel(s.nodeName, s.nodeNumber), nodeLabel(name, num))
		}
		return
	}
	if name != "" {
		s.nodeName = name
	}
	if num >= 0 {
		s.nodeNumber = num
	}
}

func nodeLabel(name string, num int64) string {
	if num < 0 {
		return name
	}
	return fmt.Sprintf("%s, number %d", name, num)
}

// end stops reading: the spans still held are delivered before err.
func (s *jfrSource) end(err error) { s.ended, s.endErr = true, err }

// takeLeftovers takes, once the closed spans are delivered, the spans
// that never got their record (their work was still open when the
// recording stopped, or their record was lost); they are kept, marked
// unfinished, in span order so that both passes see the same sequence.
func (s *jfrSource) takeLeftovers() {
	s.leftOut = true
	s.open.each(func(js *jfrSpan) {
		if !js.late {
			js.unfinished = true
			s.leftover = append(s.leftover, js)
		}
	})
	slices.SortFunc(s.leftover, func(a, b *jfrSpan) int { return cmp.Compare(a.num, b.num) })
	s.open.reset()
}

// closeSpan keeps the content of a span record in the span's buffer.
func (s *jfrSource) closeSpan(js *jfrSpan, f *jfrFields, jc *jfrClass) {
	js.nonCausal = jc.nonCausal >= 0 && f.ints[jc.nonCausal] != 0
	b := append(js.buf, recordEntry)
	s.scratch = appendID(s.scratch[:0], f, jc.in, jc.inText)
	b = appendEntryBytes(b, s.scratch)
	s.scratch = s.scratch[:0]
	ids := s.ids[:0]
	if jc.out >= 0 && f.isArr[jc.out] {
		js.outField = true
		for _, v := range f.elems[f.arr[jc.out][0]:f.arr[jc.out][1]] {
			if v != 0 {
				start := len(s.scratch)
				s.scratch = appendWireID(s.scratch, v)
				ids = append(ids, span32(start, len(s.scratch)))
			}
		}
	}
	if jc.outTxt >= 0 && f.isArr[jc.outTxt] {
		js.outField = true
		for _, t := range f.texts[f.arr[jc.outTxt][0]:f.arr[jc.outTxt][1]] {
			if t != nil {
				start := len(s.scratch)
				s.scratch = appendWireText(s.scratch, t)
				ids = append(ids, span32(start, len(s.scratch)))
			}
		}
	}
	s.ids = ids
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = appendEntryBytes(b, s.scratch[id[0]:id[1]])
	}
	js.buf = b
}

// deliverClosed delivers the oldest closed span, with the events that
// came late for it, into b. If the held queue's file fails, the input
// ends with its error.
func (s *jfrSource) deliverClosed(b *spanBatch) error {
	start := len(b.bytes)
	e, err := s.held.popAppend(b.bytes)
	if err != nil {
		s.held.reset()
		s.heldChunks = s.heldChunks[:0]
		s.end(fmt.Errorf("%s: %w", s.name, err))
		return s.nextInto(b)
	}
	flags := e[start]
	num, n := binary.Varint(e[start+1:])
	// The span's buffer follows its flags and number; late events are
	// appended after it.
	bufStart := start + 1 + n
	truncated := flags&heldTruncated != 0 || s.popped < s.truncatedUpTo
	s.popped++
	if s.heldChunks[0].n--; s.heldChunks[0].n == 0 {
		s.heldChunks = s.heldChunks[:copy(s.heldChunks, s.heldChunks[1:])]
	}
	s.heldNums.remove(num)
	if late := s.open.get(num); late != nil && late.late {
		e = append(e, late.buf...)
		s.open.remove(late)
		s.free = append(s.free, late)
	}
	b.bytes = e
	s.deliver(b, e[bufStart:], truncated, flags&heldNonCausal != 0, flags&heldOutField != 0, false)
	return nil
}

// deliver appends to b the span whose buffered events and span record
// are buf, which is in b.bytes. A record without outgoing array fields
// (the event package writes no arrays) lists the messages its span's send
// events name; an unfinished span (no record) says by its events what it
// received and whether it was a non-causal one.
func (s *jfrSource) deliver(b *spanBatch, buf []byte, truncated, nonCausal, outField, unfinished bool) {
	evStart := len(b.events)
	in := s.decodeSpan(b, buf)
	evs := b.events[evStart:]
	if unfinished {
		nonCausal = false
		for i := range evs {
			e := &evs[i]
			if e.kind == flowspec.NonCausalSend {
				nonCausal = true
			}
			if in == nil && e.msg != nil &&
				(e.kind == flowspec.Received || e.kind == flowspec.HandleStart || e.kind == flowspec.Discard) {
				in = e.msg
			}
		}
		if nonCausal {
			in = nil
		}
	}
	if !outField {
		for i := range evs {
			if e := &evs[i]; (e.kind == flowspec.SendStarted || e.kind == flowspec.SendWritten || e.kind == flowspec.NonCausalSend) && e.msg != nil {
				s.outs = append(s.outs, e.msg)
			}
		}
	}
	sp := rawSpan{nonCausal: nonCausal, truncated: truncated, unfinished: unfinished, in: in}
	outStart := len(b.outs)
	for _, o := range s.outs {
		if !slices.ContainsFunc(b.outs[outStart:], func(p []byte) bool { return string(p) == string(o) }) {
			b.outs = append(b.outs, o)
		}
	}
	sp.out = b.outs[outStart:len(b.outs):len(b.outs)]
	sp.number(&s.seq, &s.ordinal)
	for i := range evs {
		e := &evs[i]
		if nonCausal && e.kind == flowspec.SendStarted {
			e.kind = flowspec.NonCausalSend
		}
		if i == 0 || e.wall > sp.lastWall {
			sp.lastWall = e.wall
		}
	}
	sp.events = evs[:len(evs):len(evs)]
	b.spans = append(b.spans, sp)
}

// heldVarint decodes the varint (encoding/binary's) at buf[*pos:] and
// moves *pos past it: an event's ticks in a held span, three to six
// bytes, from one 8-byte load where buf has eight bytes left (leb128.FromWord:
// within eight bytes encoding/binary's varints are JFR's).
func heldVarint(buf []byte, pos *int) int64 {
	var ux uint64
	if p := *pos; len(buf)-p >= 8 {
		v, n := leb128.FromWord(binary.LittleEndian.Uint64(buf[p:]))
		if n > 0 {
			*pos, ux = p+n, v
			return int64(ux>>1) ^ -int64(ux&1)
		}
	}
	v, n := binary.Varint(buf[*pos:])
	*pos += n
	return v
}

// tickNanos converts a tick count to ns: the tick counter is the node's
// monotonic clock. It does not overflow for large tick values; ticks of
// a nanosecond (the flow recorder's) are the nanoseconds, which the
// general formula also gives, without its two divisions per event.
func tickNanos(ticks, tps int64) int64 {
	if tps == 1e9 {
		return ticks
	}
	return ticks/tps*1e9 + ticks%tps*1e9/tps
}

// decodeSpan decodes a span's buffer, appending its events to b.events
// and its record's outgoing IDs to s.outs, and returns its incoming
// message ID (nil for none). The buffer is the reader's own encoding,
// complete by construction; the events' IDs and texts point into it.
func (s *jfrSource) decodeSpan(b *spanBatch, buf []byte) (in []byte) {
	s.outs = s.outs[:0]
	pos := 0
	uvarint := func() uint64 {
		v, n := binary.Uvarint(buf[pos:])
		pos += n
		return v
	}
	// bytesAt returns the length-prefixed bytes at pos.
	bytesAt := func() []byte {
		n := int(uvarint())
		pos += n
		return buf[pos-n : pos : pos]
	}
	// An empty ID or text is none, but for a record's outgoing IDs.
	orNil := func(p []byte) []byte {
		if len(p) == 0 {
			return nil
		}
		return p
	}
	for pos < len(buf) {
		tag := buf[pos]
		pos++
		if tag == recordEntry {
			in = orNil(bytesAt())
			for range uvarint() {
				s.outs = append(s.outs, bytesAt())
			}
			continue
		}
		thread := uint32(uvarint())
		clk := s.clocks[uvarint()]
		ticks := heldVarint(buf, &pos) + clk.StartTicks
		e := rawEvent{kind: flowspec.Kind(tag - 1), thread: thread, wall: clk.Nanos(ticks), nano: tickNanos(ticks, clk.TicksPerSecond)}
		e.msg = orNil(bytesAt())
		e.text = orNil(bytesAt())
		b.events = append(b.events, e)
	}
	return in
}
