package recorder

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/flightrec/flightrec/jfr"
)

// Stream hands the events of the running recordings to functions in the
// process as they are recorded, as the JDK's RecordingStream (JEP 349)
// does: each chunk the recorder cuts (at least once a second) is read
// back with package jfr, so handlers see exactly the values `jfr print`
// shows. A stream is itself a recording (named "stream" unless WithName
// says otherwise), whose settings (WithSettings) turn on the events it
// wants; it holds no data.
//
// Register handlers, then Start. Handlers run one at a time on the
// stream's goroutine, a chunk's events in the order they were written.
type Stream struct {
	opts []Option
	rec  *Recording

	mu       sync.Mutex
	handlers map[string][]func(*jfr.Event)
	onFlush  []func()
	onError  []func(error)
	onChunk  []func([]byte)

	sendMu  sync.Mutex // guards chunks against a late chunk after Close
	closed  bool
	chunks  chan []byte
	dropped atomic.Int64 // chunks not read because the handlers fell behind
	done    chan struct{}
}

// streamBacklog is how many chunks (seconds, at the default chunk age) a
// stream's handlers may fall behind before chunks are dropped.
const streamBacklog = 8

// ErrStreamBehind is reported to OnError handlers when chunks were dropped
// because the handlers could not keep up.
var ErrStreamBehind = errors.New("recorder: stream handlers fell behind; chunks dropped")

// NewStream returns a stream that, once started, records with opts
// (WithSettings, WithName, WithMaxChunkAge...).
func NewStream(opts ...Option) *Stream {
	return &Stream{opts: opts, handlers: map[string][]func(*jfr.Event){}}
}

// OnEvent calls fn with every event of the type named name (such as
// "app.HTTPRequest"). The event and its values are valid during the call.
func (s *Stream) OnEvent(name string, fn func(*jfr.Event)) {
	s.mu.Lock()
	s.handlers[name] = append(s.handlers[name], fn)
	s.mu.Unlock()
}

// OnFlush calls fn after the events of each chunk have been handled.
func (s *Stream) OnFlush(fn func()) {
	s.mu.Lock()
	s.onFlush = append(s.onFlush, fn)
	s.mu.Unlock()
}

// OnError calls fn with each error the stream meets: a chunk it cannot
// read, or ErrStreamBehind.
func (s *Stream) OnError(fn func(error)) {
	s.mu.Lock()
	s.onError = append(s.onError, fn)
	s.mu.Unlock()
}

// OnChunk calls fn with the bytes of each chunk, a complete .jfr file of
// one chunk, which fn may keep.
func (s *Stream) OnChunk(fn func([]byte)) {
	s.mu.Lock()
	s.onChunk = append(s.onChunk, fn)
	s.mu.Unlock()
}

// Start starts the stream's recording.
func (s *Stream) Start() error {
	if s.rec != nil {
		return errors.New("recorder: stream already started")
	}
	s.chunks = make(chan []byte, streamBacklog)
	s.done = make(chan struct{})
	opts := append([]Option{WithName("stream")}, s.opts...)
	opts = append(opts, optionFunc(func(c *config) { c.sink = s.deliver }))
	rec, err := Start(opts...)
	if err != nil {
		return err
	}
	s.rec = rec
	go s.run()
	return nil
}

// Recording returns the stream's recording, nil before Start.
func (s *Stream) Recording() *Recording { return s.rec }

// Close stops the stream's recording after handing its last chunk to the
// handlers.
func (s *Stream) Close() error {
	if s.rec == nil {
		return nil
	}
	err := s.rec.Stop()
	s.sendMu.Lock()
	if !s.closed {
		s.closed = true
		close(s.chunks)
	}
	s.sendMu.Unlock()
	<-s.done
	return err
}

// deliver runs on the recorder's chunk writer: it must not wait.
func (s *Stream) deliver(chunk []byte) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.closed {
		return
	}
	select {
	case s.chunks <- chunk:
	default:
		s.dropped.Add(1)
	}
}

func (s *Stream) run() {
	defer close(s.done)
	cache := jfr.NewMetadataCache()
	var ev jfr.Event
	var reported int64
	for chunk := range s.chunks {
		s.mu.Lock()
		onChunk, onFlush, onError := s.onChunk, s.onFlush, s.onError
		handlers := s.handlers
		s.mu.Unlock()
		if d := s.dropped.Load(); d != reported {
			for _, fn := range onError {
				fn(fmt.Errorf("%w: %d chunks", ErrStreamBehind, d-reported))
			}
			reported = d
		}
		for _, fn := range onChunk {
			fn(chunk)
		}
		if len(handlers) > 0 {
			if err := dispatch(chunk, cache, handlers, &ev); err != nil {
				for _, fn := range onError {
					fn(err)
				}
			}
		}
		for _, fn := range onFlush {
			fn()
		}
	}
}

// dispatch decodes the events of the chunk that have handlers and calls
// them; the others are skipped by their size.
func dispatch(chunk []byte, cache *jfr.MetadataCache, handlers map[string][]func(*jfr.Event), ev *jfr.Event) error {
	r := jfr.NewBytesReader(chunk, &jfr.ReaderOptions{MetadataCache: cache})
	var recs [256]jfr.Record
	for {
		n, err := r.ReadRecords(recs[:])
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("recorder: stream: %w", err)
		}
		c := r.Chunk()
		for _, rec := range recs[:n] {
			if rec.TypeID < 2 {
				continue
			}
			cl := c.Metadata.Class(rec.TypeID)
			if cl == nil {
				continue
			}
			fns := handlers[cl.Name]
			if len(fns) == 0 {
				continue
			}
			if err := c.DecodeEvent(rec, ev); err != nil {
				return fmt.Errorf("recorder: stream: %w", err)
			}
			for _, fn := range fns {
				fn(ev)
			}
		}
	}
}
