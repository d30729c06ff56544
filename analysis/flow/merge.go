package flow

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/flightrec/flightrec/internal/flowspec"
)

// Options configures Merge. The zero value (or nil) gives the defaults.
type Options struct {
	// Progress, if not nil, is called now and then with the pass (1 or
	// 2) and how far it is: during the first pass the bytes of the inputs
	// read (compressed bytes for a gzip file) and their total size (-1 if
	// an input's size is unknown), during the merging pass the events
	// merged and the total the first pass counted.
	Progress func(pass int, done, total int64)
	// TempDir is where the first pass writes the spans it read for the
	// second (replay.go); "" is os.TempDir(). The files are removed when
	// Merge returns.
	TempDir string
	// MemBudget bounds the bytes the per-message arrays (span
	// references, first sends, open traces) keep in memory; past it
	// their pages spill to temporary files in TempDir (spill.go). 0 keeps
	// them all in memory. The message identities stay in memory. With a
	// budget, the spans a recording's reader holds (1 MiB per input in
	// memory, the rest in a temporary file in TempDir) that cannot go to
	// their file are an error; without one they stay in memory
	// (Merger.MemoryWarning).
	MemBudget int64
}

// Event is one event of a trace.
type Event struct {
	Nano    int64  // the node's monotonic clock, ns
	Wall    int64  // wall time corrected by the node's clock offset, ns since the epoch
	RawWall int64  // wall time as the node recorded it
	Text    string // payload that is not a message ID (tag, checkpoint text)
	Msg     int32  // message key (Trace.MessageID), -1 for none
	Thread  uint32 // index into the node's threads
	Span    uint32 // node-local sequence number of the span (NC spans included)
	Ordinal uint32 // 1-based ordinal among the node's causal spans, 0 in an NC span
	Seq     uint32 // position within the span as read, for deterministic ties
	Node    uint16
	Kind    flowspec.Kind
	// Unfinished marks the events of a span that never ended: its work
	// was still open (a hand-off never completed) when recording stopped.
	Unfinished bool
}

// Trace is a set of spans connected through message IDs, its events in
// causal order.
type Trace struct {
	// Index numbers the traces in the order they start (their first span
	// read, the inputs being read in time order), from 0. A trace formed
	// by joining two keeps the lower number, so numbers can skip.
	Index  int
	Events []Event
	// Messages are the keys of the trace's messages, sorted by their IDs.
	Messages []int32
	// Incomplete is set for a trace still waiting for spans when all
	// inputs ended: an input failed or a count is inconsistent.
	Incomplete bool
	// Inconsistencies counts receipts that had to be placed before their
	// send (a node received a message it sent only later by its own clock,
	// or IDs collide).
	Inconsistencies int
	// UnfinishedSpans counts the spans of the trace that never ended.
	UnfinishedSpans int

	m *Merger
}

// Merger holds what a merge knows about nodes and messages; Traces keep a
// reference to it for names.
type Merger struct {
	Files   []string   // input names
	Nodes   []string   // node names, by input
	Threads [][]string // thread names per node
	// Offsets are the estimated clock offsets per node, ns: corrected wall
	// time = recorded wall time - offset.
	Offsets []int64
	// ClockInconsistencies counts message constraints no clock offsets
	// satisfy.
	ClockInconsistencies int
	clock                *clockModel
	// Errors are the inputs that failed (they count as finished from
	// where they failed) and the damaged chunks skipped, each naming the
	// file, the chunk and the byte offset.
	Errors   []error
	Warnings int // malformed lines or records skipped
	// MemoryWarning, without a memory budget (Options.MemBudget 0), is
	// the first input's reason to keep in memory what it spills to a
	// temporary file (the file could not be created or written), naming
	// the file and the OS error. With a budget that is an error of Merge.
	MemoryWarning error
	// Numbers are the node numbers of the inputs (the node part of the
	// compact "node:counter" IDs they send), -1 where unknown.
	Numbers []int
	// MissingNodes are node numbers that appear in message IDs but are
	// the number of no input: nodes whose recording is missing.
	MissingNodes []uint16
	// UnfinishedSpans counts spans that never ended, kept in their traces.
	UnfinishedSpans int64
	// CausalInconsistencies sums the traces' Inconsistencies: receipts
	// placed before their send because the corrected clocks disagree.
	CausalInconsistencies int64
	Events                int64 // events read in the counting pass
	Spans                 int64
	TracesOut             int
	IncompleteTraces      int
	PeakOpenTraces        int
	PeakOpenEvents        int64

	ids      *idTable
	spill    *spillPool
	refs     spilled[int32] // remaining span references per message
	sendWall spilled[int64] // first causal send per message, raw wall ns (pass 1)
	sendNode spilled[uint16]
	trace    spilled[int32] // open trace per message, -1 none (pass 2)
	opts     Options
	rank     []int
	order    orderScratch // Trace.order's memory
}

// NodeName returns the name of an event's node.
func (t *Trace) NodeName(e *Event) string { return t.m.Nodes[e.Node] }

// ThreadName returns the name of an event's thread.
func (t *Trace) ThreadName(e *Event) string { return t.m.Threads[e.Node][e.Thread] }

// MessageID returns the text of a message key.
func (t *Trace) MessageID(k int32) string { return t.m.ids.Text(uint32(k)) }

// Merger returns the merge the trace came from.
func (t *Trace) Merger() *Merger { return t.m }

// maxTexts bounds the cache that shares equal payload strings (tags,
// checkpoint texts) between events.
const maxTexts = 1 << 16

// Merge reads the inputs twice and calls fn with every trace, in the order
// the traces complete. The first pass counts, for every message ID, the
// spans that mention it and estimates the clock offsets; the second pass
// reads the inputs again, span by span, always from the input whose next
// span ends earliest (after correction), joins spans into traces and hands
// a trace to fn as soon as no span anywhere can still mention one of its
// messages. Memory therefore holds the counts (a few tens of bytes per
// message) and the traces still open, which the time-aligned reading keeps
// to the traces in flight around the current time.
//
// fn runs on a goroutine of its own while the merge goes on, one trace at
// a time, in that order; until Merge returns it may read the Merger's
// names (Nodes, Threads, Files, MissingNodes), offsets and message IDs,
// not its counters.
//
// An input that fails to open or to read counts as finished from where it
// failed; its error is in Merger.Errors and the traces that waited for
// its spans are handed to fn at the end with Incomplete set. The returned
// error is fn's, or nil.
func Merge(inputs []Input, opts *Options, fn func(*Trace) error) (*Merger, error) {
	m := &Merger{}
	if opts != nil {
		m.opts = *opts
	}
	m.spill = newSpillPool(m.opts.MemBudget, m.opts.TempDir)
	defer m.spill.close()
	m.ids = newIDTable()
	m.refs = newSpilled[int32](m.spill, "span references")
	m.sendWall = newSpilled[int64](m.spill, "first sends")
	m.sendNode = newSpilled[uint16](m.spill, "first senders")
	m.trace = newSpilled[int32](m.spill, "open traces")
	if len(inputs) > math.MaxUint16 {
		return m, fmt.Errorf("%d inputs, at most %d", len(inputs), math.MaxUint16)
	}
	m.Nodes = make([]string, len(inputs))
	for _, in := range inputs {
		m.Files = append(m.Files, in.Name)
	}
	m.Threads = make([][]string, len(inputs))
	// failed: 1 = could not be opened (pass 2 skips it), 2 = failed while
	// read (pass 2 reads it again up to the same point, releasing what
	// pass 1 counted, and does not report the error twice).
	failed := make([]uint8, len(inputs))
	inputErr := make([]error, len(inputs)) // why an input failed
	n := len(inputs)
	minDelay := make([]int64, n*n)
	for i := range minDelay {
		minDelay[i] = noDelay
	}
	delays := make([]pairDelays, n*n) // fastest delay per time bucket
	note := func(a, b int, send, d int64) {
		minDelay[a*n+b] = min(minDelay[a*n+b], d)
		noteSample(delays, n, a, b, send, d)
	}
	type receipt struct {
		key  uint32
		node uint16
		wall int64
	}
	var pending paged[receipt] // receipts read before their send
	var keys []uint32
	var msgs []int32
	// Pass 1 reads the inputs time-aligned too (by their raw wall clocks),
	// so that a message's send is mostly seen before its receipts and the
	// receipts waiting for their send stay few.
	type pass1Input struct {
		src  *readAhead
		sp   rawSpan
		have bool
		i    int
	}
	var ins []*pass1Input
	var bytesRead atomic.Int64
	totalBytes := int64(0)
	for _, in := range inputs {
		if in.Size <= 0 || totalBytes < 0 {
			totalBytes = -1
		} else {
			totalBytes += in.Size
		}
	}
	spans := make([]int64, n)        // spans read per input
	sends := make([]numberCounts, n) // node numbers of the compact IDs each input originates
	var seen numberSet               // node numbers in any compact ID
	recordings := make([]bool, n)    // the input is a flow recording
	allCorrected := true             // every input is a cut: its clock is corrected
	var fatal []error
	m.Numbers = make([]int, n)
	logs := make([]*loggingSource, n) // the spans of pass 1, replayed in pass 2
	defer func() {
		for _, l := range logs {
			if l != nil {
				l.log.remove()
			}
		}
	}()
	for i, in := range inputs {
		m.Numbers[i] = -1
		m.Nodes[i] = nodeNameOf(in.Name)
		src, err := openSource(countReads(in, &bytesRead), m.opts.TempDir)
		if err != nil {
			m.Errors = append(m.Errors, err)
			failed[i], inputErr[i] = 1, err
			continue
		}
		if js, ok := src.(*jfrSource); ok {
			recordings[i], js.bounded = true, m.opts.MemBudget > 0
		}
		log, err := newSpanLog(m.opts.TempDir)
		if err != nil {
			src.Close()
			for _, in := range ins {
				in.src.Close()
			}
			return m, err
		}
		log.input = in.Name
		logs[i] = &loggingSource{source: src, log: log}
		ins = append(ins, &pass1Input{src: newLoggingReadAhead(logs[i]), i: i})
	}
	advance := func(in *pass1Input) {
		err := in.src.next(&in.sp)
		in.have = err == nil
		if err != nil {
			if !errors.Is(err, io.EOF) {
				m.Errors = append(m.Errors, err)
				failed[in.i], inputErr[in.i] = 2, err
			}
			m.Nodes[in.i] = in.src.node()
			m.Threads[in.i] = slices.Clone(in.src.threads())
			m.Warnings += in.src.warnings()
			m.Errors = append(m.Errors, in.src.damaged()...)
			if num := in.src.number(); num >= 0 {
				m.Numbers[in.i] = int(num)
			}
			allCorrected = allCorrected && in.src.corrected()
			if err := in.src.fatal(); err != nil {
				fatal = append(fatal, err)
			}
			if m.MemoryWarning == nil {
				m.MemoryWarning = in.src.memoryWarning()
			}
			in.src.Close()
			// Pass 2 replays the log: the reader, its chunk buffer and
			// its held spans' memory go now, not after the merge.
			logs[in.i].source = nil
		}
	}
	for _, in := range ins {
		advance(in)
	}
	ids := &spanIDs{find: m.intern}
	key := ids.key
	for {
		var in *pass1Input
		for _, c := range ins {
			if c.have && (in == nil || c.sp.lastWall < in.sp.lastWall) {
				in = c
			}
		}
		if in == nil {
			break
		}
		sp, i := &in.sp, in.i
		m.Spans++
		spans[i]++
		if m.opts.Progress != nil && m.Spans%1024 == 1 {
			m.opts.Progress(1, bytesRead.Load(), totalBytes)
		}
		m.Events += int64(len(sp.events))
		noteNumbers(sp, &sends[i], &seen)
		ids.reset()
		keys = spanKeys(sp, keys[:0], key)
		for _, k := range keys {
			(*m.refs.at(int(k)))++
		}
		// The keys of the events' messages, those only events name
		// interned too, go to the span log with the span's: pass 2
		// looks none up.
		msgs = eventMsgs(sp, msgs[:0], key)
		in.src.noteKeys(keys, msgs)
		if !sp.nonCausal {
			for j := range sp.events {
				e := &sp.events[j]
				if e.kind == flowspec.SendStarted && e.msg != nil {
					k := msgs[j]
					if (*m.sendWall.at(int(k))) == noDelay || e.wall < (*m.sendWall.at(int(k))) {
						(*m.sendWall.at(int(k))), (*m.sendNode.at(int(k))) = e.wall, uint16(i)
					}
				}
			}
			if sp.in != nil {
				k := keys[0] // spanKeys' first: the incoming ID's
				if w, ok := receiptWall(sp); ok {
					if s := (*m.sendWall.at(int(k))); s != noDelay {
						// Later sends of the same ID cannot be earlier by
						// more than the reordering of the time-aligned
						// reading; the first one seen is the send.
						if (*m.sendNode.at(int(k))) != uint16(i) {
							note(int(*m.sendNode.at(int(k))), i, s, w-s)
						}
					} else {
						pending.Append(receipt{k, uint16(i), w})
					}
				}
			}
		}
		advance(in)
	}
	for j := range pending.Len() {
		r := pending.Get(j)
		if s := (*m.sendWall.at(int(r.key))); s != noDelay && (*m.sendNode.at(int(r.key))) != r.node {
			note(int(*m.sendNode.at(int(r.key))), int(r.node), s, r.wall-s)
		}
	}
	pending = paged[receipt]{}
	m.sendWall.release()
	m.sendNode.release()
	if m.spill.err != nil {
		return m, m.spill.err
	}
	for i, a := range m.Nodes {
		for j, b := range m.Nodes[:i] {
			if a == b {
				return m, fmt.Errorf("%s and %s are both node %s: each node needs its own name", inputs[j].Name, inputs[i].Name, a)
			}
		}
	}
	read := slices.ContainsFunc(spans, func(n int64) bool { return n > 0 })
	for i, in := range inputs {
		switch {
		case spans[i] > 0:
		case failed[i] == 0:
			fatal = append(fatal, fmt.Errorf("%s: no flow events: not a recording of a flow.Node nor a span log", in.Name))
		case !read:
			// No input gave a span (each missing, a directory, not a
			// recording): there is nothing to report, where a report
			// of empty nodes showed NaN. Beside inputs that were read,
			// one that failed counts as finished, as damage does.
			fatal = append(fatal, inputErr[i])
		}
	}
	origs := make([]map[uint16]int, n)
	for i := range sends {
		origs[i] = sends[i].counts()
	}
	fatal = append(fatal, m.numberNodes(inputs, recordings, origs, &seen)...)
	if len(fatal) > 0 {
		return m, errors.Join(fatal...)
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(m.Nodes[a], m.Nodes[b]) })
	if allCorrected {
		m.Offsets = make([]int64, n)
	} else {
		m.Offsets, m.ClockInconsistencies = estimateOffsets(n, minDelay, order)
		settleAll(delays)
		m.clock = buildClockModel(n, delays, m.Offsets, order)
	}
	for range m.ids.Len() {
		m.trace.Append(-1)
	}
	err := m.pass2(logs, fn)
	if m.spill.err != nil {
		// What fn was given after the error may be wrong: the error,
		// not fn's, is the merge's.
		err = m.spill.err
	}
	return m, err
}

// compareIDs orders message IDs as people read them: runs of digits by
// their value, so 2:2 comes before 2:12.
func compareIDs(a, b string) int {
	for a != "" && b != "" {
		if isDigit(a[0]) && isDigit(b[0]) {
			i, j := digits(a), digits(b)
			na, nb := strings.TrimLeft(a[:i], "0"), strings.TrimLeft(b[:j], "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			if c := cmp.Compare(i, j); c != 0 {
				return c
			}
			a, b = a[i:], b[j:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// digits returns the length of the run of digits s starts with.
func digits(s string) int {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// compactNode returns the node part of a compact "node:counter" ID.
func compactNode(id []byte) (uint16, bool) {
	i := 0
	var n uint32
	for ; i < len(id) && id[i] >= '0' && id[i] <= '9'; i++ {
		n = n*10 + uint32(id[i]-'0')
		if n > 0xffff {
			return 0, false
		}
	}
	if i == 0 || i+1 >= len(id) || id[i] != ':' {
		return 0, false
	}
	for _, c := range id[i+1:] {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	return uint16(n), true
}

// numberSet is a set of node numbers: a bitmap, as noteNumbers adds a
// number for every message ID of pass 1.
type numberSet [1 << 16 / 64]uint64

func (s *numberSet) add(n uint16)      { s[n>>6] |= 1 << (n & 63) }
func (s *numberSet) has(n uint16) bool { return s[n>>6]&(1<<(n&63)) != 0 }

// numberCounts counts node numbers. An input originates the IDs of one
// number, save for errors: a run of one number is counted without a map
// access per ID.
type numberCounts struct {
	m    map[uint16]int
	run  uint16
	runN int
}

func (c *numberCounts) add(n uint16) {
	if c.runN > 0 && n == c.run {
		c.runN++
		return
	}
	c.flush()
	c.run, c.runN = n, 1
}

func (c *numberCounts) flush() {
	if c.runN > 0 {
		if c.m == nil {
			c.m = make(map[uint16]int)
		}
		c.m[c.run] += c.runN
		c.runN = 0
	}
}

// counts returns the numbers counted and their counts, nil for none.
func (c *numberCounts) counts() map[uint16]int {
	c.flush()
	return c.m
}

// noteNumbers notes the node numbers of a span's compact IDs: all of them
// in seen, those the span originates (sends of IDs it did not receive) in
// orig.
func noteNumbers(sp *rawSpan, orig *numberCounts, seen *numberSet) {
	if sp.in != nil {
		if n, ok := wireNode(sp.in); ok {
			seen.add(n)
		}
	}
	for j := range sp.events {
		e := &sp.events[j]
		if !isSend(e.kind) || e.msg == nil {
			continue
		}
		n, ok := wireNode(e.msg)
		if !ok {
			continue
		}
		seen.add(n)
		if sp.nonCausal || string(e.msg) != string(sp.in) {
			orig.add(n)
		}
	}
}

// numberNodes gives each input the node number of the compact IDs it
// originates, refuses two inputs with one number (two recordings of one
// node, or two nodes numbered alike: their operations would merge into
// one trace) and one flow recording originating two numbers (two nodes in
// one process: its spans would mix), and lists the numbers of nodes with
// no input.
// A span log may fold several numbers into one node (MFT 2016 did, per
// destination), so only flow recordings are held to one number.
func (m *Merger) numberNodes(inputs []Input, recordings []bool, sends []map[uint16]int, seen *numberSet) []error {
	var errs []error
	owner := make(map[uint16]int)
	for i, orig := range sends {
		nums := slices.Sorted(maps.Keys(orig))
		if declared := m.Numbers[i]; declared >= 0 {
			for _, num := range nums {
				if int(num) != declared {
					errs = append(errs, fmt.Errorf("%s: node %s is number %d but sends messages of node %d: two nodes in one recording; record one node per recording",
						inputs[i].Name, m.Nodes[i], declared, num))
				}
			}
			if !slices.Contains(nums, uint16(declared)) && declared <= math.MaxUint16 {
				nums = append(nums, uint16(declared))
			}
		} else if len(nums) > 1 && recordings[i] {
			errs = append(errs, fmt.Errorf("%s: sends messages of nodes %v: two nodes in one recording; record one node per recording", inputs[i].Name, nums))
		}
		if len(nums) == 1 {
			m.Numbers[i] = int(nums[0])
		}
		for _, num := range nums {
			if j, ok := owner[num]; ok && j != i {
				errs = append(errs, fmt.Errorf("%s and %s both use node number %d: two recordings of one node, or two nodes with the same number, would merge unrelated operations",
					inputs[j].Name, inputs[i].Name, num))
				continue
			}
			owner[num] = i
		}
	}
	if len(owner) > 0 {
		for num := range 1 << 16 {
			if _, ok := owner[uint16(num)]; seen.has(uint16(num)) && !ok {
				m.MissingNodes = append(m.MissingNodes, uint16(num))
			}
		}
	}
	return errs
}

// receiptWall returns when a span received its incoming message: its first
// Incoming event, else the handling or discard of the message (local
// delivery has no Incoming).
func receiptWall(sp *rawSpan) (int64, bool) {
	best, ok := int64(0), false
	for i := range sp.events {
		e := &sp.events[i]
		if e.kind == flowspec.Received && (!ok || e.wall < best) {
			best, ok = e.wall, true
		}
	}
	if ok {
		return best, true
	}
	for i := range sp.events {
		e := &sp.events[i]
		if (e.kind == flowspec.HandleStart || e.kind == flowspec.Discard) && string(e.msg) == string(sp.in) {
			return e.wall, true
		}
	}
	return 0, false
}

// intern returns the key of a message ID, growing the per-message arrays
// of pass 1. Only pass 1 interns: pass 2 finds every ID in the table.
func (m *Merger) intern(id []byte) uint32 {
	k, added := m.ids.Intern(id)
	if added {
		m.refs.Append(0)
		m.sendWall.Append(noDelay)
		m.sendNode.Append(0)
	}
	return k
}

// spanKeys appends the distinct message keys a span references: its
// incoming and outgoing IDs, or only the outgoing ones for a non-causal
// span. Pass 1 counts them, and pass
// 2 releases the keys logged with them, so each (span, ID) is counted and
// released exactly once — the reference tool
// released an NC span's ID once per retransmission event and died on the
// second.
func spanKeys(sp *rawSpan, keys []uint32, key func(id []byte) uint32) []uint32 {
	if sp.in != nil && !sp.nonCausal {
		keys = append(keys, key(sp.in))
	}
	for _, id := range sp.out {
		if k := key(id); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// openTrace is a trace being assembled in pass 2.
type openTrace struct {
	index      int  // Trace.Index
	truncated  bool // holds a span a read error may have cut short
	unfinished int  // spans that never ended
	events     []Event
	keys       []uint32
	open       int32 // keys whose references are not all consumed
}

type pass2Input struct {
	reported error // the input's end, which pass 1 already reported
	src      *readAhead
	sp       *mergeSpan // the next span, nil at the end
	span     uint32
}

// pass2 replays the spans pass 1 logged; an input's end (io.EOF or the
// error pass 1 reported already) comes at the same point.
func (m *Merger) pass2(logs []*loggingSource, fn func(*Trace) error) error {
	var ins []*pass2Input
	// Closed on every return, also when a later input's log fails: the
	// read-ahead goroutines of the earlier ones are running.
	defer func() {
		for _, in := range ins {
			in.src.Close()
		}
	}()
	for i, l := range logs {
		if l == nil {
			continue
		}
		if err := l.log.finish(); err != nil {
			return err
		}
		src, err := newReplaySource(l.log, l.endErr, m, uint16(i))
		if err != nil {
			return err
		}
		ins = append(ins, &pass2Input{src: newReplayAhead(src), reported: l.endErr})
	}
	advance := func(in *pass2Input) {
		var err error
		in.sp, err = in.src.nextMerged()
		if err != nil && !errors.Is(err, io.EOF) && err != in.reported {
			m.Errors = append(m.Errors, err)
		}
	}
	for _, in := range ins {
		advance(in)
	}
	var (
		traces  []*openTrace
		free    []int32
		nopen   int
		nevents int64
		done    int64
		created int
	)
	// Open traces are recycled, their events' memory too: a released
	// trace's events are copied into the arena the Trace takes them from.
	var spare []*openTrace
	var arena traceArena
	recycle := func(t *openTrace) {
		if cap(t.events) <= 1024 {
			spare = append(spare, t)
		}
	}
	newTrace := func() int32 {
		nopen++
		m.PeakOpenTraces = max(m.PeakOpenTraces, nopen)
		created++
		var t *openTrace
		if n := len(spare); n > 0 {
			t = spare[n-1]
			spare = spare[:n-1]
			*t = openTrace{index: created - 1, events: t.events[:0], keys: t.keys[:0]}
		} else {
			t = &openTrace{index: created - 1, events: make([]Event, 0, 8)}
		}
		if n := len(free); n > 0 {
			ti := free[n-1]
			free = free[:n-1]
			traces[ti] = t
			return ti
		}
		traces = append(traces, t)
		return int32(len(traces) - 1)
	}
	out := newTraceOut(m, fn)
	emit := func(ti int32, incomplete bool) {
		t := traces[ti]
		traces[ti] = nil
		free = append(free, ti)
		nopen--
		nevents -= int64(len(t.events))
		for _, k := range t.keys {
			(*m.trace.at(int(k))) = -1
		}
		defer recycle(t)
		if out.failed.Load() {
			return
		}
		tr := arena.trace()
		*tr = Trace{Index: t.index, Events: arena.events(t.events), Incomplete: incomplete || t.truncated,
			UnfinishedSpans: t.unfinished, Messages: arena.messages(t.keys), m: m}
		out.send(tr)
	}
	// join adds key k to trace ti, merging k's trace into it if k has one.
	join := func(ti int32, k uint32) int32 {
		// One look-up per array for a key: the element's pointer is valid
		// until the array is used again.
		kt := m.trace.at(int(k))
		other := *kt
		if other == ti {
			return ti
		}
		if other < 0 {
			t := traces[ti]
			*kt = ti
			t.keys = append(t.keys, k)
			if (*m.refs.at(int(k))) > 0 {
				t.open++
			}
			return ti
		}
		// Merge the smaller trace into the larger, so every key moves
		// O(log n) times at most.
		a, b := traces[ti], traces[other]
		if len(a.keys)+len(a.events) < len(b.keys)+len(b.events) {
			ti, other = other, ti
			a, b = b, a
		}
		a.events = append(a.events, b.events...)
		for _, k2 := range b.keys {
			(*m.trace.at(int(k2))) = ti
		}
		a.keys = append(a.keys, b.keys...)
		a.open += b.open
		a.truncated = a.truncated || b.truncated
		a.unfinished += b.unfinished
		a.index = min(a.index, b.index)
		traces[other] = nil
		free = append(free, other)
		recycle(b)
		nopen--
		return ti
	}
	release := func(ti int32, k uint32) {
		if r := m.refs.at(int(k)); *r > 0 {
			if *r--; *r == 0 {
				traces[ti].open--
			}
		}
	}
	for !out.failed.Load() && m.spill.err == nil {
		// The input whose next span ends first after clock correction.
		var in *pass2Input
		for _, c := range ins {
			if c.sp != nil && (in == nil || c.sp.endAt < in.sp.endAt) {
				in = c
			}
		}
		if in == nil {
			break
		}
		sp := in.sp
		in.span++
		done += int64(sp.nevents)
		if m.opts.Progress != nil && in.span%1024 == 0 {
			m.opts.Progress(2, done, m.Events)
		}
		if sp.nonCausal {
			// Only the sends of a non-causal span matter: each becomes a
			// Retransmission event in its message's trace (its events are
			// those).
			for _, e := range sp.events {
				k := uint32(e.Msg)
				ti := (*m.trace.at(int(k)))
				if ti < 0 {
					ti = newTrace()
					ti = join(ti, k)
				}
				traces[ti].events = append(traces[ti].events, e)
				nevents++
			}
			for _, k := range sp.keys {
				if ti := (*m.trace.at(int(k))); ti >= 0 {
					release(ti, k)
					if traces[ti].open == 0 {
						emit(ti, false)
					}
				} else if r := m.refs.at(int(k)); *r > 0 {
					*r--
				}
			}
		} else {
			ti := int32(-1)
			for _, k := range sp.keys {
				if kt := *m.trace.at(int(k)); kt >= 0 {
					ti = kt
					break
				}
			}
			if ti < 0 {
				ti = newTrace()
			}
			for _, k := range sp.keys {
				ti = join(ti, k)
			}
			t := traces[ti]
			t.truncated = t.truncated || sp.truncated
			if sp.unfinished {
				t.unfinished++
				m.UnfinishedSpans++
			}
			t.events = append(t.events, sp.events...)
			nevents += int64(len(sp.events))
			for _, k := range sp.keys {
				release(ti, k)
			}
			if t.open == 0 {
				emit(ti, false)
			}
		}
		m.PeakOpenEvents = max(m.PeakOpenEvents, nevents)
		advance(in)
	}
	// What is still open waits for spans no input will deliver.
	for ti := range traces {
		if traces[ti] != nil {
			emit(int32(ti), true)
		}
	}
	ferr := out.close()
	if m.opts.Progress != nil {
		m.opts.Progress(2, m.Events, m.Events)
	}
	return ferr
}

// traceArena allocates the Traces pass 2 releases, their events and
// messages in blocks: an allocation per trace, of memory the collector
// scans, cost more than the merging. A Trace's slices are capped, so
// that appending to them cannot write over another trace's.
type traceArena struct {
	traces []Trace
	evs    []Event
	msgs   []int32
}

const (
	arenaTraces = 64
	arenaEvents = 256
)

func (a *traceArena) trace() *Trace {
	if len(a.traces) == cap(a.traces) {
		a.traces = make([]Trace, 0, arenaTraces)
	}
	a.traces = a.traces[:len(a.traces)+1]
	return &a.traces[len(a.traces)-1]
}

// events returns a copy of evs.
func (a *traceArena) events(evs []Event) []Event {
	if cap(a.evs)-len(a.evs) < len(evs) {
		a.evs = make([]Event, 0, max(arenaEvents, len(evs)))
	}
	start := len(a.evs)
	a.evs = append(a.evs, evs...)
	return a.evs[start:len(a.evs):len(a.evs)]
}

// messages returns the keys as a trace's messages.
func (a *traceArena) messages(keys []uint32) []int32 {
	if cap(a.msgs)-len(a.msgs) < len(keys) {
		a.msgs = make([]int32, 0, max(arenaEvents, len(keys)))
	}
	start := len(a.msgs)
	for _, k := range keys {
		a.msgs = append(a.msgs, int32(k))
	}
	return a.msgs[start:len(a.msgs):len(a.msgs)]
}

// correct returns a raw wall time of a node in the common time: less the
// node's clock offset at that time.
func (m *Merger) correct(node uint16, wall int64) int64 {
	k := -1
	return m.correctFrom(node, wall, &k)
}

// correctFrom is correct for a reader of times in order, with the clock
// model's estimate found last in *k (clockModel.atFrom).
func (m *Merger) correctFrom(node uint16, wall int64, k *int) int64 {
	off := m.Offsets[node]
	if m.clock != nil {
		off = m.clock.atFrom(int(node), wall-off, k)
	}
	return wall - off
}

// OffsetAt returns node i's estimated clock offset at its raw wall time
// wall, ns: corrected time = wall - offset.
func (m *Merger) OffsetAt(i int, wall int64) int64 { return wall - m.correct(uint16(i), wall) }
