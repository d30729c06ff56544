package recorder

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/flightrec/flightrec/jfr"
)

// Stream hands the events of the running recordings to functions in the
// process as they are recorded, as the JDK's RecordingStream (JEP 349)
// does: each chunk the recorder writes is read back with package jfr
// once it is closed, so handlers see exactly the values `jfr print` shows.
// While a stream runs the recorder cuts a chunk at least once a second
// (otherwise chunks are cut by size), so events reach the handlers within
// about a second; every recording's chunks are cut as often meanwhile.
// A stream is itself a recording (named "stream" unless WithName says
// otherwise), whose settings (WithSettings) turn on the events it wants;
// it holds no data.
//
// Register handlers, then Start. Handlers run one at a time on the
// stream's goroutine, a chunk's events in the order they were written.
type Stream struct {
	opts []Option
	rec  *Recording

	mu       sync.Mutex
	handlers map[string][]func(*jfr.Event)
	version  int // of handlers
	onFlush  []func()
	onError  []func(error)
	onChunk  []func([]byte)

	sendMu  sync.Mutex // guards chunks against a late chunk after Close
	closed  bool
	chunks  chan []byte
	free    chan []byte  // chunk buffers handed back by run, for reuse
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
	s.version++
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
	s.free = make(chan []byte, streamBacklog+1)
	s.done = make(chan struct{})
	opts := append([]Option{WithName("stream")}, s.opts...)
	opts = append([]Option{withChunkSink(s.deliver)}, opts...)
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

// deliver runs on the recorder's chunk writer: it must not wait. It takes
// the chunk and gives the collector a buffer the stream has done with, if
// any: a new chunk-sized buffer for every chunk costs the emitters the
// collector's time.
func (s *Stream) deliver(chunk []byte) []byte {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.closed {
		return chunk
	}
	select {
	case s.chunks <- chunk:
	default:
		s.dropped.Add(1)
		return chunk
	}
	select {
	case buf := <-s.free:
		return buf
	default:
		return nil
	}
}

func (s *Stream) run() {
	defer close(s.done)
	cache := jfr.NewMetadataCache()
	var ev jfr.Event
	var byID handlerTable
	var reported int64
	for chunk := range s.chunks {
		s.mu.Lock()
		onChunk, onFlush, onError := s.onChunk, s.onFlush, s.onError
		handlers := maps.Clone(s.handlers)
		version := s.version
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
			if err := dispatch(chunk, cache, handlers, version, &ev, &byID); err != nil {
				for _, fn := range onError {
					fn(err)
				}
			}
		}
		for _, fn := range onFlush {
			fn()
		}
		if len(onChunk) == 0 {
			select {
			case s.free <- chunk:
			default:
			}
		}
	}
}

// dispatch decodes the events of the chunk that have handlers (at
// version) and calls them; the others are skipped by their size.
func dispatch(chunk []byte, cache *jfr.MetadataCache, handlers map[string][]func(*jfr.Event), version int, ev *jfr.Event, byID *handlerTable) error {
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
		byID.update(c.Metadata, handlers, version)
		for _, rec := range recs[:n] {
			fns := byID.lookup(rec.TypeID)
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

// handlerTable finds the handlers of a record's type by its id, without
// hashing its name for every record.
type handlerTable struct {
	md    *jfr.Metadata
	built int                  // version of the handlers the table was built for
	small [][]func(*jfr.Event) // by id, for ids below maxSmallID
	large map[int64][]func(*jfr.Event)
}

const maxSmallID = 1 << 12

func (t *handlerTable) update(md *jfr.Metadata, handlers map[string][]func(*jfr.Event), version int) {
	if md == t.md && t.built == version {
		return
	}
	t.md, t.built = md, version
	clear(t.small)
	t.large = map[int64][]func(*jfr.Event){}
	for _, cl := range md.EventTypes() {
		fns := handlers[cl.Name]
		switch {
		case len(fns) == 0:
		case cl.ID >= 2 && cl.ID < maxSmallID:
			if int(cl.ID) >= len(t.small) {
				t.small = append(t.small, make([][]func(*jfr.Event), int(cl.ID)+1-len(t.small))...)
			}
			t.small[cl.ID] = fns
		case cl.ID >= 2:
			t.large[cl.ID] = fns
		}
	}
}

func (t *handlerTable) lookup(id int64) []func(*jfr.Event) {
	if id >= 0 && id < int64(len(t.small)) {
		return t.small[id]
	}
	if id < maxSmallID {
		return nil
	}
	return t.large[id]
}
