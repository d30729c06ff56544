package recorder

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/flightrec/flightrec/jfr"
)

// Option configures a recording.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	name         string
	file         string
	ring         bool
	maxSize      int64
	maxAge       time.Duration
	maxChunkSize int64
	maxChunkAge  time.Duration
	settings     Settings
	onError      func(error)
	envRedaction []string          // WithEnvRedaction
	sink         func(seg segment) // gets each segment delivered, valid during the call (collect.go)
}

// defaultMaxChunkSize is the JDK's default maximum chunk size.
const defaultMaxChunkSize = 12 << 20

// WithName names the recording (jdk.ActiveRecording's name).
func WithName(name string) Option { return optionFunc(func(c *config) { c.name = name }) }

// WithFile writes the recording to path, chunk by chunk.
func WithFile(path string) Option { return optionFunc(func(c *config) { c.file = path }) }

// WithRing keeps the recording in memory, dropping the oldest chunks
// beyond maxSize bytes or older than maxAge (0: no limit); Dump writes it.
func WithRing(maxSize int64, maxAge time.Duration) Option {
	return optionFunc(func(c *config) { c.ring, c.maxSize, c.maxAge = true, maxSize, maxAge })
}

// WithMaxChunkSize ends a chunk once it holds about n bytes (default
// 12 MB, as the JDK; for a ring, a quarter of its maximum size if that is
// less): at the first flushpoint that takes it to n or more, so a chunk
// may pass n by what one flush writes (most often under a third of the
// buffers, which hold 128 KiB each: max(80, 2*GOMAXPROCS+64) of them to
// begin with). Events are written into the chunk at every flushpoint, once a
// second, so a chunk is not a unit of loss: a killed process leaves a
// file readable up to its last flushpoint whatever the chunk size. A chunk
// repeats the metadata and the constants (goroutines, stacks) its events
// refer to, so small chunks cost space.
func WithMaxChunkSize(n int64) Option { return optionFunc(func(c *config) { c.maxChunkSize = n }) }

// WithMaxChunkAge ends a chunk after d (default: no limit for a file, as
// the JDK; for a ring with a maximum age, a quarter of it).
func WithMaxChunkAge(d time.Duration) Option {
	return optionFunc(func(c *config) { c.maxChunkAge = d })
}

// WithErrorHandler has f called, once, with the recording's first write
// error, when it happens (from the recorder's goroutine). Err returns it
// too; the recording then writes nothing more, and counts what it loses.
func WithErrorHandler(f func(error)) Option { return optionFunc(func(c *config) { c.onError = f }) }

// WithSettings applies settings on top of the preset "default".
func WithSettings(s Settings) Option {
	return optionFunc(func(c *config) { c.settings = c.settings.Merge(s) })
}

// Recording is a running or stopped recording.
type Recording struct {
	id    int64
	cfg   config
	start time.Time

	mu       sync.Mutex
	settings Settings
	file     *fileSink
	inChunk  bool // the recording has the start of the chunk being written
	chunks   []ringChunk
	spare    []byte // a dropped ring chunk's memory, for the next
	err      error
	// What was lost after a write error: events and bytes not written.
	lostEvents, lostBytes int64
	// ringMaxSeg is the largest segment added to the ring (ringChunkCap).
	ringMaxSeg int64
}

type ringChunk struct {
	data []byte
	end  time.Time
}

// errNilRecording is what the methods of a nil *Recording (a failed
// Start's) return.
var errNilRecording = errors.New("recorder: no recording (a nil *Recording: did Start fail?)")

// Start starts a recording.
func Start(opts ...Option) (*Recording, error) {
	def, _ := Preset("default")
	cfg := config{name: "flightrec", settings: def, envRedaction: DefaultEnvRedaction}
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.file == "" && !cfg.ring && cfg.sink == nil {
		return nil, errors.New("recorder: a recording needs WithFile or WithRing")
	}
	if cfg.maxChunkSize == 0 {
		cfg.maxChunkSize = defaultMaxChunkSize
		if cfg.ring && cfg.maxSize > 0 {
			cfg.maxChunkSize = min(cfg.maxChunkSize, max(cfg.maxSize/4, 16<<10))
		}
	}
	if cfg.maxChunkAge == 0 {
		cfg.maxChunkAge = math.MaxInt64
		if cfg.ring && cfg.maxAge > 0 {
			cfg.maxChunkAge = max(cfg.maxAge/4, time.Millisecond)
		}
	}
	r := &Recording{cfg: cfg, settings: cfg.settings, start: time.Now()}
	if cfg.file != "" {
		f, err := createFileSink(cfg.file)
		if err != nil {
			return nil, fmt.Errorf("recorder: %w", err)
		}
		r.file = f
	}
	theSession.add(r)
	return r, nil
}

// SetSettings replaces the recording's settings (on top of "default"); they
// apply to events emitted from now on.
func (r *Recording) SetSettings(s Settings) {
	if r == nil {
		return
	}
	def, _ := Preset("default")
	r.mu.Lock()
	r.settings = def.Merge(s)
	r.mu.Unlock()
	theSession.applySettings()
}

func (r *Recording) currentSettings() Settings {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.settings
}

// Stop ends the recording: the events emitted so far are written, the
// last chunk is closed and so is the file. It returns the first error the
// recording met (Err), with what was lost after it, and names the event
// types that could not be declared, whose events were not recorded.
func (r *Recording) Stop() error {
	if r == nil {
		return errNilRecording
	}
	theSession.remove(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file != nil {
		if err := r.file.close(); err != nil && r.err == nil {
			r.err = fmt.Errorf("recorder: %w", err)
		}
		r.file = nil
	}
	err := r.err
	if err != nil && r.lostEvents+r.lostBytes > 0 {
		err = fmt.Errorf("%w (after it %d events, %d bytes were not written)", r.err, r.lostEvents, r.lostBytes)
	}
	return errors.Join(err, undeclarable())
}

// Err returns the first error the recording met (a failed write to its
// file, or encoding a chunk), or nil.
func (r *Recording) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Lost returns how many events, and bytes of the file, were not written
// after the recording's first error.
func (r *Recording) Lost() (events, bytes int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lostEvents, r.lostBytes
}

// fail records err as the recording's error if it is the first, and
// tells the error handler.
func (r *Recording) fail(err error) {
	r.mu.Lock()
	first := r.err == nil
	if first {
		r.err = err
	}
	r.mu.Unlock()
	if first && r.cfg.onError != nil {
		r.cfg.onError(err)
	}
}

// Dump writes the chunks an in-memory recording keeps (after cutting a
// chunk, so it includes the events emitted so far) as a .jfr file.
func (r *Recording) Dump(w io.Writer) error {
	if r == nil {
		return errNilRecording
	}
	if w == nil {
		return errors.New("recorder: Dump to a nil io.Writer")
	}
	if !r.cfg.ring {
		return errors.New("recorder: Dump needs a WithRing recording")
	}
	// The execution tracer's flight recorder, converted now (tracer.go),
	// before the flush, which writes the CPU samples it gives goroutines.
	traced, err := theSession.flightDump()
	if err != nil {
		return err
	}
	theSession.flushNow()
	data, err := r.snapshot()
	if err != nil {
		return err
	}
	data = append(data, traced...)
	markFinal(data)
	_, err = w.Write(data)
	return err
}

// markFinal sets the final-chunk flag on the last chunk of data only.
func markFinal(data []byte) {
	for off := 0; off+jfr.HeaderSize <= len(data); {
		size := int(binary.BigEndian.Uint64(data[off+8:]))
		flags := uint16(jfr.FlagCompressedInts)
		if off+size >= len(data) {
			flags |= jfr.FlagFinalChunk
		}
		binary.BigEndian.PutUint16(data[off+66:], flags)
		if size <= 0 {
			return
		}
		off += size
	}
}

// deliver adds a segment of the chunk being written to the recording.
// Pinned (st, the chunk writer's), it settles for what may block: a
// stream's sink, an error, and ends pinned.
func (r *Recording) deliver(seg segment, end time.Time, st *steps) {
	t := phaseStart()
	st.lock(&r.mu)
	phaseSince(phaseDeliverLock, t)
	if seg.first {
		r.inChunk = true
	} else if !r.inChunk {
		// A chunk that began before the recording started.
		r.mu.Unlock()
		return
	}
	pinned := st != nil && st.pinned
	repin := func() {
		if pinned {
			st.begin()
		}
	}
	if r.cfg.sink != nil {
		st.settle()
		r.cfg.sink(seg)
		repin()
	}
	if seg.closed {
		r.inChunk = false
	}
	var failed error
	if r.file != nil {
		if r.err == nil {
			t := phaseStart()
			r.file.steps = st
			err := r.file.write(seg)
			r.file.steps = nil
			phaseSince(phaseFileWrite, t)
			if err != nil {
				st.settle()
				r.err = fmt.Errorf("recorder: %s: %w", r.cfg.file, err)
				failed = r.err
				repin()
			}
		}
		if r.err != nil {
			r.lostEvents += seg.events()
			r.lostBytes += seg.size()
		}
	}
	if r.cfg.ring {
		r.ringAdd(seg, end)
	}
	r.mu.Unlock()
	if failed != nil && r.cfg.onError != nil {
		st.settle()
		r.cfg.onError(failed)
		repin()
	}
}

// reclaimRoom moves the bytes of c, a complete ring chunk cut with most
// of its memory unused (a recording or a stream started or stopped: each
// cuts the chunk being written), to memory of their size, and keeps
// c's memory as the spare for the next chunk if it is the larger. So a
// full ring's chunk begun after a cut takes memory the ring has, as one
// begun after a chunk cut at the cut size does, and the ring holds at
// most about twice its bytes however often its chunks are cut. Without
// it, behind a tight loop of events with streams coming and going
// (BenchmarkStream), each chunk begun after a cut took fresh memory and
// regrew by doubling into more: 1.3 GB allocated in 16 ops of 4 M
// events, zeroed and faulted in on the chunk writer.
func (r *Recording) reclaimRoom(c *ringChunk) {
	if room := cap(c.data) - len(c.data); room < minReclaim || room < cap(c.data)/2 {
		return
	}
	big := c.data
	c.data = slices.Clone(big)
	if cap(big) > cap(r.spare) {
		r.spare = big[:0]
	}
}

// minReclaim is the least unused memory of a ring chunk that
// reclaimRoom takes back.
const minReclaim = 64 << 10

// ringSize returns the bytes of the ring's chunks.
func (r *Recording) ringSize() int64 {
	var n int64
	for _, c := range r.chunks {
		n += int64(len(c.data))
	}
	return n
}

// ringChunkCap is the room a ring chunk is given at most before it
// needs more: the size it is cut at, plus the largest segment delivered
// so far, as the flushpoint that crosses the cut size may be that large
// (behind a tight emit loop, a third of the buffers or more: 3-7 MB
// against 12 MB chunks), rounded up to a quarter of the cut size, so that
// it stays the same while the largest segment grows a little.
func (r *Recording) ringChunkCap() int64 {
	q := max(r.cfg.maxChunkSize/4, 1)
	return (r.cfg.maxChunkSize + r.ringMaxSeg + q - 1) / q * q
}

// ringAdd adds a segment to the in-memory chunks, dropping the oldest
// complete ones beyond the ring's limits.
func (r *Recording) ringAdd(seg segment, end time.Time) {
	r.ringMaxSeg = max(r.ringMaxSeg, seg.size())
	if seg.first {
		// A chunk that follows one cut at the cut size gets the room
		// such a chunk may take (ringChunkCap), every time the same, so
		// that a full ring takes each new chunk's memory from the one it
		// dropped (spare) and allocates nothing: sized to each chunk's
		// own need, a chunk outgrew the dropped one's memory about every
		// time, and each fresh 16 MB were faulted in and zeroed on the
		// flusher (5-7 B/op of BenchmarkFlightrec/enabled). A smaller
		// chunk (cut by age, or at Start) is sized like the last one, an
		// eighth over, so that its flushpoints are appended without
		// regrowth; a chunk cut short leaves its memory to the next
		// (reclaimRoom).
		want := seg.size()
		if n := len(r.chunks); n > 0 {
			r.reclaimRoom(&r.chunks[n-1])
			want = max(want, int64(len(r.chunks[n-1].data)))
		}
		if want >= r.cfg.maxChunkSize {
			want = r.ringChunkCap()
		} else {
			want = min(want+want/8, r.ringChunkCap())
		}
		data := r.spare[:0]
		if int64(cap(data)) < want {
			data = make([]byte, 0, want)
		}
		r.chunks = append(r.chunks, ringChunk{data: data})
		r.spare = nil
	}
	c := &r.chunks[len(r.chunks)-1]
	if need := len(c.data) + int(seg.size()); need > cap(c.data) {
		// Double rather than append's quarter (fewer copies), up to
		// the room a chunk cut at the cut size may take.
		c.data = append(make([]byte, 0, max(need, min(2*cap(c.data), int(r.ringChunkCap())))), c.data...)
	}
	c.data = seg.appendTo(c.data)
	c.end = end
	total := r.ringSize()
	for len(r.chunks) > 1 && ((r.cfg.maxSize > 0 && total > r.cfg.maxSize) ||
		(r.cfg.maxAge > 0 && end.Sub(r.chunks[0].end) > r.cfg.maxAge)) {
		old := r.chunks[0].data
		total -= int64(len(old))
		// Shifted down, not resliced: a resliced slice's append
		// reallocates it every few chunks.
		r.chunks = slices.Delete(r.chunks, 0, 1)
		// Keep the largest dropped chunk's memory for the next one:
		// a fresh 12 MB chunk is zeroed, and collected, every time.
		if cap(old) > cap(r.spare) {
			r.spare = old
		}
	}
}
