package recorder

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/jfr"
)

// Recordings returns the running recordings, oldest first: those the
// program started and those started from outside (package agent).
func Recordings() []*Recording {
	theSession.mu.Lock()
	defer theSession.mu.Unlock()
	return slices.Clone(theSession.recordings)
}

// Find returns the running recording whose name, or else whose id, is
// nameOrID; with several of the same name, the oldest.
func Find(nameOrID string) (*Recording, bool) {
	recs := Recordings()
	for _, r := range recs {
		if r.cfg.name == nameOrID {
			return r, true
		}
	}
	if id, err := strconv.ParseInt(nameOrID, 10, 64); err == nil {
		for _, r := range recs {
			if r.id == id {
				return r, true
			}
		}
	}
	return nil, false
}

// ID returns the recording's id, unique in the process (jdk.ActiveRecording's id).
func (r *Recording) ID() int64 { return r.id }

// Name returns the recording's name (WithName; "flightrec" by default).
func (r *Recording) Name() string { return r.cfg.name }

// StartTime returns when the recording started.
func (r *Recording) StartTime() time.Time { return r.start }

// Destination returns the file the recording writes, or "" for one kept
// in memory or streamed.
func (r *Recording) Destination() string { return r.cfg.file }

// InMemory tells whether the recording keeps its chunks in memory (WithRing).
func (r *Recording) InMemory() bool { return r.cfg.ring }

// Limits returns the ring's maximum size and age (0: none).
func (r *Recording) Limits() (maxSize int64, maxAge time.Duration) {
	return r.cfg.maxSize, r.cfg.maxAge
}

// Size returns the bytes the recording holds: written to its file, or
// kept in its ring.
func (r *Recording) Size() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cfg.ring {
		return r.ringSize()
	}
	if r.file != nil {
		return r.file.end
	}
	return 0
}

// Settings returns the recording's settings: the preset "default" with
// its own on top.
func (r *Recording) Settings() Settings { return r.currentSettings() }

// Configure changes some settings of the recording, keeping the others;
// they apply to events emitted from now on.
func (r *Recording) Configure(s Settings) {
	r.SetSettings(r.currentSettings().Merge(s))
}

// DumpRange writes what the recording holds now, after cutting a chunk so
// that it includes the events emitted so far, as a .jfr file: the ring of
// an in-memory recording, or the chunks written so far to a recording's
// file. Only chunks that overlap [begin, end] are written; a zero begin or
// end leaves that side open. It fails if no chunk is in the range.
func (r *Recording) DumpRange(w io.Writer, begin, end time.Time) error {
	theSession.flushNow()
	data, err := r.snapshot()
	if err != nil {
		return err
	}
	data = chunksBetween(data, begin, end)
	if len(data) == 0 {
		return errors.New("recorder: the recording holds no chunk in the time range")
	}
	markFinal(data)
	_, err = w.Write(data)
	return err
}

// snapshot copies the chunks the recording holds.
func (r *Recording) snapshot() ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cfg.ring {
		data := make([]byte, 0, r.ringSize())
		for _, c := range r.chunks {
			data = append(data, c.data...)
		}
		return data, nil
	}
	if r.file == nil {
		if r.cfg.file == "" {
			return nil, errors.New("recorder: a streamed recording holds nothing to dump")
		}
		return nil, fmt.Errorf("recorder: recording %q is stopped: its file is %s", r.cfg.name, r.cfg.file)
	}
	return r.file.snapshot(r.cfg.file)
}

// chunksBetween returns the chunks of data (complete chunks, as the
// recorder wrote them) that overlap [begin, end], moved to the front of
// data.
func chunksBetween(data []byte, begin, end time.Time) []byte {
	out := data[:0]
	for off := 0; off+jfr.HeaderSize <= len(data); {
		size := int(binary.BigEndian.Uint64(data[off+8:]))
		if size < jfr.HeaderSize || off+size > len(data) {
			break
		}
		start := time.Unix(0, int64(binary.BigEndian.Uint64(data[off+32:])))
		stop := start.Add(time.Duration(binary.BigEndian.Uint64(data[off+40:])))
		if (begin.IsZero() || !stop.Before(begin)) && (end.IsZero() || !start.After(end)) {
			out = append(out, data[off:off+size]...)
		}
		off += size
	}
	return out
}

// EventTypes returns the names of the event types the recorder knows: the
// types defined with package event and those it writes itself.
func EventTypes() []string {
	types, _ := batch.Types()
	names := make([]string, 0, len(types)+len(rawTypeNames))
	for _, d := range types {
		names = append(names, d.Name)
	}
	names = append(names, rawTypeNames...)
	slices.Sort(names)
	return slices.Compact(names)
}

// snapshot reads back what the sink wrote to path: its chunks, the last
// ending at its data (not its reservation). The caller holds the
// recording's lock, so no write runs meanwhile.
func (s *fileSink) snapshot(path string) ([]byte, error) {
	if !s.opened {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("recorder: reading back %s: %w", path, err)
	}
	defer f.Close()
	data := make([]byte, s.end)
	if _, err := f.ReadAt(data, 0); err != nil {
		return nil, fmt.Errorf("recorder: reading back %s: %w", path, err)
	}
	binary.BigEndian.PutUint64(data[s.start+8:], uint64(s.end-s.start))
	return data, nil
}
