package flow

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/flightrec/flightrec/internal/flowspec"
	"github.com/flightrec/flightrec/internal/gzipped"
)

// Input is one node's recording. Merge opens and reads it once: the
// second pass replays the spans the first read (replay.go).
type Input struct {
	// Name is the file name; without its extension it is the node name
	// when the recording does not name its node.
	Name string
	Open func() (io.ReadCloser, error)
	// Size is how many bytes Open's reader returns, 0 if unknown: the
	// first pass's progress is the share of the inputs' bytes read.
	Size int64
}

// FileInput returns the Input of a file.
func FileInput(path string) Input {
	in := Input{Name: path, Open: func() (io.ReadCloser, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		// A directory opens; its first read fails with an error that
		// names it again ("DIR: read DIR: is a directory").
		if st, err := f.Stat(); err == nil && st.IsDir() {
			f.Close()
			return nil, fmt.Errorf("%s: is a directory", path)
		}
		return f, nil
	}}
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		in.Size = st.Size()
	}
	return in
}

// BytesInput returns an Input holding data in memory.
func BytesInput(name string, data []byte) Input {
	return Input{Name: name, Size: int64(len(data)), Open: func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}}
}

// countReads returns in with the bytes its readers return added to n
// (atomically: inputs are read on goroutines of their own).
func countReads(in Input, n *atomic.Int64) Input {
	open := in.Open
	in.Open = func() (io.ReadCloser, error) {
		rc, err := open()
		if err != nil {
			return nil, err
		}
		return &countingReader{rc, n}, nil
	}
	return in
}

type countingReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	k, err := r.ReadCloser.Read(p)
	r.n.Add(int64(k))
	return k, err
}

// nodeNameOf is the reference tool's rule: the file name without its
// (last) extension.
func nodeNameOf(path string) string {
	base := filepath.Base(path)
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	return base
}

// rawEvent is one event as a source reads it. Byte slices are valid until
// the next call of next.
type rawEvent struct {
	nano   int64
	wall   int64
	thread uint32
	kind   flowspec.Kind
	msg    []byte // message ID, if the event has one
	text   []byte // other payload
}

// rawSpan is one span as a source reads it; its slices are reused.
type rawSpan struct {
	nonCausal  bool
	in         []byte   // incoming message ID, nil for none
	out        [][]byte // outgoing message IDs, without duplicates
	events     []rawEvent
	ordinal    uint32 // 1-based among the causal spans of the input, 0 for NC
	seq        uint32 // 1-based among all spans of the input
	lastWall   int64  // greatest wall time of its events
	truncated  bool   // a read error or damage may have cut the span short
	unfinished bool   // the span never ended: its work was open when recording stopped
}

// source reads one input span by span.
type source interface {
	// next reads the next span into sp; io.EOF at the end.
	next(sp *rawSpan) error
	// node returns the node's name (known after the first span for
	// recordings that name it, otherwise the file name).
	node() string
	// threads returns the names of the threads, by index.
	threads() []string
	// warnings returns how many malformed lines or records were skipped.
	warnings() int
	// damaged returns the damage skipped while reading (with file, chunk
	// and byte offset); reading went on after it.
	damaged() []error
	// number returns the node number the input declares, or -1.
	number() int64
	// fatal returns an error that makes the input unusable, found while
	// reading (such as two nodes in one recording).
	fatal() error
	// memoryWarning returns why the reader kept in memory what it spills
	// to a temporary file (the file could not be created or written), or
	// nil.
	memoryWarning() error
	// corrected tells whether the input's wall times are already
	// corrected (a span log written by Cut), known after the first span.
	corrected() bool
	Close() error
}

// jfrMagic starts every JFR chunk.
var jfrMagic = []byte("FLR\x00")

// openSource opens in and picks the reader by the content's first bytes.
// A recording's reader keeps the spans it holds in a temporary file in
// dir ("" for os.TempDir()).
func openSource(in Input, dir string) (source, error) {
	rc, err := in.Open()
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(rc, 1<<20)
	r, compressed, err := gzipped.NewReader(in.Name, br)
	if err != nil {
		rc.Close()
		return nil, err
	}
	if compressed {
		rc = struct {
			io.Reader
			io.Closer
		}{r, rc}
		br = bufio.NewReaderSize(r, 1<<20)
	}
	head, _ := br.Peek(4)
	if bytes.Equal(head, jfrMagic) {
		return newJFRSource(in.Name, br, rc, dir), nil
	}
	return newTextSource(in.Name, br, rc)
}

// textSource reads a message-flow-tracer 2013 text span log.
type textSource struct {
	name       string
	r          *bufio.Reader
	c          io.Closer
	originNano int64
	originWall int64 // ns
	line       int
	pending    []byte // a header line read ahead, owned copy
	hasPending bool
	err        error // a read error, returned after the span it cut short
	text       []byte
	offs       []evOffs
	eof        bool
	thr        map[string]uint32
	thrNames   []string
	bad        int
	ordinal    uint32
	seq        uint32
	buf        []byte // holds the current span's event text
	fields     [][]byte
	// isCorrected: the log says its wall times are corrected already.
	isCorrected bool
}

// CorrectedClockLine follows the first line of a span log whose wall
// times are corrected already (Cut writes it): merging such logs applies no
// clock offsets, so a cut trace merges back to the same times. Other tools
// skip it as an invalid line.
const CorrectedClockLine = "# flightrec: clock corrected"

func newTextSource(name string, r *bufio.Reader, c io.Closer) (*textSource, error) {
	s := &textSource{name: name, r: r, c: c, thr: make(map[string]uint32)}
	first, err := s.readLine()
	if err != nil {
		c.Close()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty span log", name)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	nano, wall, ok := bytes.Cut(first, []byte("="))
	n, ok1 := parseInt(nano)
	w, ok2 := parseInt(wall)
	if !ok || !ok1 || !ok2 {
		c.Close()
		// The input did not start as a recording does either: a user who
		// gave a corrupt or wrong file wants to hear about both formats.
		return nil, fmt.Errorf("%s:1: neither a recording (no JFR magic at byte 0) nor a span log (its first line is <nanoTime>=<unixMillis>)", name)
	}
	s.originNano, s.originWall = n, w*1e6
	return s, nil
}

// readLine returns the next line without its end; the slice is valid
// until the next read.
func (s *textSource) readLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// A line longer than the buffer: collect it.
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = s.r.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if len(line) == 0 && err != nil {
		return nil, err
	}
	s.line++
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	return line, nil
}

func (s *textSource) node() string         { return nodeNameOf(s.name) }
func (s *textSource) threads() []string    { return s.thrNames }
func (s *textSource) warnings() int        { return s.bad }
func (s *textSource) damaged() []error     { return nil }
func (s *textSource) number() int64        { return -1 }
func (s *textSource) fatal() error         { return nil }
func (s *textSource) memoryWarning() error { return nil }
func (s *textSource) corrected() bool      { return s.isCorrected }
func (s *textSource) Close() error         { return s.c.Close() }

// split splits a line at ';' as Java's String.split does: trailing empty
// fields are dropped, so the reference tool's own cut files ("...;PUT;")
// read back.
func (s *textSource) split(line []byte) [][]byte {
	f := s.fields[:0]
	for {
		i := bytes.IndexByte(line, ';')
		if i < 0 {
			f = append(f, line)
			break
		}
		f = append(f, line[:i])
		line = line[i+1:]
	}
	for len(f) > 0 && len(f[len(f)-1]) == 0 {
		f = f[:len(f)-1]
	}
	s.fields = f
	return f
}

func (s *textSource) next(sp *rawSpan) error {
	var header []byte
	for header == nil {
		if s.hasPending {
			header = append(s.buf[:0], s.pending...)
			s.buf = header
			s.hasPending = false
			break
		}
		if s.eof {
			if s.err != nil {
				return s.err
			}
			return io.EOF
		}
		line, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return io.EOF
			}
			return fmt.Errorf("%s:%d: %w", s.name, s.line, err)
		}
		if bytes.HasPrefix(line, []byte("SPAN;")) || bytes.HasPrefix(line, []byte("NC;")) {
			header = append(s.buf[:0], line...)
			s.buf = header
		} else if string(line) == CorrectedClockLine {
			s.isCorrected = true
		} else if len(line) > 0 && line[0] != '#' {
			s.bad++ // an event before any span header
		}
	}
	f := s.split(header)
	sp.nonCausal = string(f[0]) == "NC"
	sp.in = nil
	if len(f) > 1 && string(f[1]) != "null" && len(f[1]) > 0 {
		sp.in = textWire(f[1])
	}
	sp.out = sp.out[:0]
	if len(f) > 2 {
		for _, id := range f[2:] {
			if len(id) == 0 || string(id) == "null" {
				continue
			}
			sp.addOutgoing(textWire(id))
		}
	}
	sp.number(&s.seq, &s.ordinal)
	// The header's fields point into s.buf; event texts go to a second
	// buffer so that growing it cannot move them.
	sp.events = sp.events[:0]
	sp.lastWall = s.originWall
	sp.truncated, sp.unfinished = false, false
	text := s.text[:0]
	offs := s.offs[:0]
	for {
		line, err := s.readLine()
		if err != nil {
			// Deliver what was read; a read error ends the input at the
			// next call.
			if !errors.Is(err, io.EOF) {
				s.err = fmt.Errorf("%s:%d: %w", s.name, s.line+1, err)
				sp.truncated = true
			}
			s.eof = true
			break
		}
		if len(line) == 0 {
			continue
		}
		if bytes.HasPrefix(line, []byte("SPAN;")) || bytes.HasPrefix(line, []byte("NC;")) {
			s.pending = append(s.pending[:0], line...)
			s.hasPending = true
			break
		}
		if !bytes.HasPrefix(line, []byte("E;")) {
			s.bad++
			continue
		}
		ef := s.split(line)
		if len(ef) < 4 || len(ef) > 5 {
			s.bad++
			continue
		}
		nano, ok := parseInt(ef[1])
		kind := flowspec.KindOfLogName(string(ef[3]))
		if !ok || kind == flowspec.Invalid || kind == flowspec.NonCausalSend {
			s.bad++
			continue
		}
		if sp.nonCausal && kind == flowspec.SendStarted {
			kind = flowspec.NonCausalSend
		}
		th, ok := s.thr[string(ef[2])]
		if !ok {
			th = uint32(len(s.thrNames))
			name := string(ef[2])
			s.thr[name] = th
			s.thrNames = append(s.thrNames, name)
		}
		e := rawEvent{nano: nano, wall: s.originWall + nano - s.originNano, thread: th, kind: kind}
		if e.wall > sp.lastWall || len(sp.events) == 0 {
			sp.lastWall = e.wall
		}
		var o evOffs
		if len(ef) == 5 {
			start := len(text)
			text = append(text, ef[4]...)
			if hasMessage(kind) {
				o.msg = [2]int{start, len(text)}
			} else {
				o.text = [2]int{start, len(text)}
			}
		}
		sp.events = append(sp.events, e)
		offs = append(offs, o)
	}
	s.text, s.offs = text, offs
	for i := range sp.events {
		o := offs[i]
		if o.msg[1] > o.msg[0] {
			sp.events[i].msg = textWire(text[o.msg[0]:o.msg[1]])
		}
		if o.text[1] > o.text[0] {
			sp.events[i].text = text[o.text[0]:o.text[1]]
		}
	}
	return nil
}

// textWire returns a span log's message ID in wire form (ids.go): the
// text itself, or a copy escaped if it starts with wireMark (no ID made
// by a tracer does). An ID in compact form stays text: the ID table
// parses it, and the IDs of one span log are all texts, so equal ones
// keep equal bytes.
func textWire(id []byte) []byte {
	if len(id) > 0 && id[0] == wireMark {
		return appendWireText(nil, id)
	}
	return id
}

// evOffs locates an event's payload in textSource.text.
type evOffs struct{ msg, text [2]int }

// hasMessage tells whether events of kind k carry a message ID.
func hasMessage(k flowspec.Kind) bool {
	switch k {
	case flowspec.Received, flowspec.HandleStart, flowspec.HandleEnd, flowspec.Discard,
		flowspec.SendStarted, flowspec.SendWritten, flowspec.NonCausalSend:
		return true
	}
	return false
}

// parseInt parses a signed decimal without allocating.
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// addOutgoing adds id to the span's outgoing IDs, which are a set.
func (sp *rawSpan) addOutgoing(id []byte) {
	for _, o := range sp.out {
		if bytes.Equal(o, id) {
			return
		}
	}
	sp.out = append(sp.out, id)
}

// number gives the span the next sequence number of its input (seq counts
// all spans) and, if it is causal, the next ordinal (which counts the
// causal ones); a non-causal span's ordinal is 0.
func (sp *rawSpan) number(seq, ordinal *uint32) {
	*seq++
	sp.seq = *seq
	sp.ordinal = 0
	if !sp.nonCausal {
		*ordinal++
		sp.ordinal = *ordinal
	}
}
