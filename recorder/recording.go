package recorder

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
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
	sink         func(parts [][]byte, size int64) // gets each delivered chunk, valid during the call (stream.go)
}

// WithName names the recording (jdk.ActiveRecording's name).
func WithName(name string) Option { return optionFunc(func(c *config) { c.name = name }) }

// WithFile writes the recording to path, chunk by chunk.
func WithFile(path string) Option { return optionFunc(func(c *config) { c.file = path }) }

// WithRing keeps the recording in memory, dropping the oldest chunks
// beyond maxSize bytes or older than maxAge (0: no limit); Dump writes it.
func WithRing(maxSize int64, maxAge time.Duration) Option {
	return optionFunc(func(c *config) { c.ring, c.maxSize, c.maxAge = true, maxSize, maxAge })
}

// WithMaxChunkSize ends a chunk once its events take about n bytes
// (default 12 MB, as JFR).
func WithMaxChunkSize(n int64) Option { return optionFunc(func(c *config) { c.maxChunkSize = n }) }

// WithMaxChunkAge ends a chunk after d (default and maximum 1 s, so a
// killed process loses at most about a second of events).
func WithMaxChunkAge(d time.Duration) Option {
	return optionFunc(func(c *config) { c.maxChunkAge = d })
}

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
	file     *os.File
	lastHdr  int64 // offset of the last chunk written to file, -1 if none
	size     int64
	chunks   []ringChunk
	spare    []byte // a dropped ring chunk's memory, for the next
	err      error
}

type ringChunk struct {
	data []byte
	end  time.Time
}

// Start starts a recording.
func Start(opts ...Option) (*Recording, error) {
	def, _ := Preset("default")
	cfg := config{name: "flightrec", maxChunkSize: 12 << 20, maxChunkAge: time.Second, settings: def}
	for _, o := range opts {
		o.apply(&cfg)
	}
	if cfg.maxChunkAge <= 0 || cfg.maxChunkAge > time.Second {
		cfg.maxChunkAge = time.Second
	}
	if cfg.file == "" && !cfg.ring && cfg.sink == nil {
		return nil, errors.New("recorder: a recording needs WithFile or WithRing")
	}
	r := &Recording{cfg: cfg, settings: cfg.settings, lastHdr: -1, start: time.Now()}
	if cfg.file != "" {
		f, err := os.Create(cfg.file)
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

// Stop ends the recording: the events emitted so far are written as a last
// chunk and the file is closed.
func (r *Recording) Stop() error {
	theSession.remove(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file != nil {
		if err := r.file.Close(); err != nil && r.err == nil {
			r.err = fmt.Errorf("recorder: %w", err)
		}
		r.file = nil
	}
	return r.err
}

// Dump writes the chunks an in-memory recording keeps (after cutting a
// chunk, so it includes the events emitted so far) as a .jfr file.
func (r *Recording) Dump(w io.Writer) error {
	if !r.cfg.ring {
		return errors.New("recorder: Dump needs a WithRing recording")
	}
	theSession.flushNow()
	r.mu.Lock()
	var all bytes.Buffer
	n := 0
	for _, c := range r.chunks {
		n += len(c.data)
	}
	all.Grow(n)
	for _, c := range r.chunks {
		all.Write(c.data)
	}
	r.mu.Unlock()
	data := all.Bytes()
	markFinal(data)
	_, err := w.Write(data)
	return err
}

// markFinal sets the final-chunk flag on the last chunk of data only.
func markFinal(data []byte) {
	for off := 0; off+jfr.HeaderSize <= len(data); {
		size := int(be64(data[off+8:]))
		flags := jfr.FlagCompressedInts
		if off+size >= len(data) {
			flags |= jfr.FlagFinalChunk
		}
		data[off+66], data[off+67] = byte(flags>>8), byte(flags)
		if size <= 0 {
			return
		}
		off += size
	}
}

func be64(b []byte) uint64 {
	return uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
		uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
}

// deliver appends a finished chunk (final flag set), given in pieces, to
// the recording.
func (r *Recording) deliver(parts [][]byte, end time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var size int64
	for _, p := range parts {
		size += int64(len(p))
	}
	if r.cfg.sink != nil {
		r.cfg.sink(parts, size)
	}
	if r.file != nil && r.err == nil {
		if err := r.writeChunk(parts); err != nil {
			r.err = fmt.Errorf("recorder: %w", err)
		} else {
			r.lastHdr = r.size
			r.size += size
		}
	}
	if r.cfg.ring {
		data := r.spare[:0]
		if int64(cap(data)) < size {
			data = make([]byte, 0, size)
		}
		r.spare = nil
		for _, p := range parts {
			data = append(data, p...)
		}
		r.chunks = append(r.chunks, ringChunk{data: data, end: end})
		var total int64
		for _, c := range r.chunks {
			total += int64(len(c.data))
		}
		for len(r.chunks) > 1 && ((r.cfg.maxSize > 0 && total > r.cfg.maxSize) ||
			(r.cfg.maxAge > 0 && end.Sub(r.chunks[0].end) > r.cfg.maxAge)) {
			old := r.chunks[0].data
			total -= int64(len(old))
			r.chunks[0] = ringChunk{}
			r.chunks = r.chunks[1:]
			// Keep the largest dropped chunk's memory for the next one:
			// a fresh 12 MB chunk is zeroed, and collected, every time.
			if cap(old) > cap(r.spare) {
				r.spare = old
			}
		}
	}
}

// writeChunk appends the chunk to the file and clears the final flag of
// the chunk before it: only the last chunk of a file is final.
func (r *Recording) writeChunk(parts [][]byte) error {
	for _, p := range parts {
		if _, err := r.file.Write(p); err != nil {
			return err
		}
	}
	if r.lastHdr >= 0 {
		var fl [2]byte
		fl[1] = byte(jfr.FlagCompressedInts)
		if _, err := r.file.WriteAt(fl[:], r.lastHdr+66); err != nil {
			return err
		}
	}
	return nil
}
