package jfr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// FollowOptions configures Follow. The zero value (or nil) gives the
// defaults.
type FollowOptions struct {
	// Poll is how often the file is looked at for more data. Default
	// 100 ms.
	Poll time.Duration
	// FinalGrace is how long a finished chunk flagged final must stay at
	// the end of the file before Follow takes the recording as ended.
	// A writer may flag each chunk final as it appends it, so that the
	// file is a complete recording at every moment (flightrec's recorder
	// does), and clear the flag when it appends the next. Default 2 s,
	// twice the longest chunk age of flightrec's recorder.
	FinalGrace time.Duration
	// Reader bounds what is read, as for NewReader.
	Reader *ReaderOptions
}

func (o *FollowOptions) poll() time.Duration {
	if o == nil || o.Poll <= 0 {
		return 100 * time.Millisecond
	}
	return o.Poll
}

func (o *FollowOptions) finalGrace() time.Duration {
	if o == nil || o.FinalGrace <= 0 {
		return 2 * time.Second
	}
	return o.FinalGrace
}

// Follow reads a recording file while it is being written, as the JDK's
// EventStream.openFile does: each time a chunk grows (a writer's flush
// rewrites the chunk header's size; the state byte is 1..254 while the
// chunk is in progress, 255 while its header is rewritten, 0 once it is
// finished) or a new chunk is appended, it calls fn with a Reader of the
// new records only, their chunk's metadata and constant pools loaded. It
// waits for more until the recording ends with a finished chunk flagged
// final (see FollowOptions.FinalGrace), ctx is done (it returns
// ctx.Err()), the data is bad (a *FormatError), or fn fails.
func Follow(ctx context.Context, path string, opts *FollowOptions, fn func(*Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fw := follower{ctx: ctx, f: f, opts: opts}
	return fw.run(fn)
}

type follower struct {
	ctx  context.Context
	f    *os.File
	opts *FollowOptions
}

// errNotYet means the data is not there yet: wait and look again.
var errNotYet = errors.New("not yet written")

func (fw *follower) run(fn func(*Reader) error) error {
	var chunkOff, delivered int64 // delivered: bytes of the chunk handed to fn
	idx := 0
	var finalSince time.Time // when a final chunk was first seen at the end
	for {
		h, fileSize, err := fw.header(chunkOff, idx)
		if errors.Is(err, errNotYet) {
			if err := fw.wait(); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		end := chunkOff + h.Size
		if end > fileSize {
			// The header was written before the data it counts.
			if err := fw.wait(); err != nil {
				return err
			}
			continue
		}
		if h.Size > delivered {
			r := NewReader(io.NewSectionReader(fw.f, chunkOff, h.Size), fw.opts.readerOptions())
			r.next, r.index, r.skip = chunkOff, idx, delivered
			if err := fn(r); err != nil {
				return err
			}
			delivered = h.Size
		}
		if !h.Finished() {
			if err := fw.wait(); err != nil {
				return err
			}
			continue
		}
		if h.Flags&FlagFinalChunk != 0 && fileSize <= end {
			if finalSince.IsZero() {
				finalSince = time.Now()
			}
			if time.Since(finalSince) >= fw.opts.finalGrace() {
				return nil
			}
			if err := fw.wait(); err != nil {
				return err
			}
			continue
		}
		finalSince = time.Time{}
		if fileSize <= end {
			if err := fw.wait(); err != nil {
				return err
			}
			continue
		}
		chunkOff, delivered, idx = end, 0, idx+1
	}
}

func (o *FollowOptions) readerOptions() *ReaderOptions {
	if o == nil {
		return nil
	}
	return o.Reader
}

func (fw *follower) wait() error {
	t := time.NewTimer(fw.opts.poll())
	defer t.Stop()
	select {
	case <-fw.ctx.Done():
		return fw.ctx.Err()
	case <-t.C:
		return nil
	}
}

// header reads the chunk header at off consistently: the state byte read
// before and after the fields must agree and must not be 255 (being
// rewritten). It returns errNotYet while the header is incomplete, being
// rewritten, or has no metadata yet.
func (fw *follower) header(off int64, idx int) (Header, int64, error) {
	for try := 0; ; try++ {
		st, err := fw.f.Stat()
		if err != nil {
			return Header{}, 0, err
		}
		size := st.Size()
		if size < off+HeaderSize {
			return Header{}, size, errNotYet
		}
		var b [HeaderSize]byte
		var state [1]byte
		if _, err := fw.f.ReadAt(b[:], off); err != nil {
			return Header{}, size, err
		}
		if _, err := fw.f.ReadAt(state[:], off+64); err != nil {
			return Header{}, size, err
		}
		if b[64] == 255 || state[0] != b[64] {
			if try < 10 {
				time.Sleep(time.Millisecond)
				continue
			}
			return Header{}, size, errNotYet
		}
		if [4]byte(b[:4]) == [4]byte{} {
			return Header{}, size, errNotYet // a hole the header goes in
		}
		if [4]byte(b[:4]) == Magic && b[64] != 0 && [8]byte(b[24:32]) == [8]byte{} {
			return Header{}, size, errNotYet // in progress, before its first flush
		}
		h, err := parseHeader(b[:])
		if err != nil {
			return Header{}, size, &FormatError{Chunk: idx, Offset: off, Err: fmt.Errorf("chunk header: %w", err)}
		}
		if h.Size > fw.opts.readerOptions().maxChunkSize() {
			return Header{}, size, &FormatError{Chunk: idx, Offset: off + 8, Err: fmt.Errorf("%w: chunk size %d exceeds the maximum %d", ErrLimit, h.Size, fw.opts.readerOptions().maxChunkSize())}
		}
		return h, size, nil
	}
}
