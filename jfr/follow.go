package jfr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/flightrec/flightrec/internal/leb128"
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
// EventStream.openFile does, and calls fn with a Reader of each part of it
// newly flushed, the chunk's metadata and constant pools loaded: a new
// chunk, or the records a writer's flush added to the chunk it is writing.
//
// A writer flushes by writing records ending with a checkpoint and then
// the chunk header (its size, and the offset of that checkpoint); the
// header's state byte is 255 while the header is rewritten, 1..254 (the
// JDK) or 0 while the chunk is written, 0 once it is finished. Follow
// reads a header only when its state byte reads the same before and after
// and is not 255, and hands over the records up to the end of the chunk's
// last checkpoint (or metadata), so records written after the last flush
// wait for the next; the rest of a chunk, up to its size, when a chunk
// follows it or the recording ends. It waits for more until the file's
// last chunk is finished, flagged final and its header has not changed for
// FollowOptions.FinalGrace; ctx is done (it returns ctx.Err()); the data
// is bad (a *FormatError); or fn fails.
func Follow(ctx context.Context, path string, opts *FollowOptions, fn func(*Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fw := follower{ctx: ctx, f: f, opts: opts, fn: fn}
	return fw.run()
}

type follower struct {
	ctx  context.Context
	f    followFile
	opts *FollowOptions
	fn   func(*Reader) error
	// The chunk being read: its bytes up to its last flush handed over,
	// read once each, and what was read of them.
	live  *LiveChunk
	buf   []byte
	chunk int // index of the chunk in live and buf, -1 before the first
}

// followFile is what Follow reads of the file: an *os.File.
type followFile interface {
	io.ReaderAt
	Stat() (os.FileInfo, error)
}

// errNotYet means the data is not there yet: wait and look again.
var errNotYet = errors.New("not yet written")

func (fw *follower) run() error {
	fw.live, fw.chunk = NewLiveChunk(fw.opts.readerOptions()), -1
	chunkOff, idx := int64(0), 0
	skip := int64(HeaderSize) // the chunk's records before it were handed over
	var last [HeaderSize]byte // the header as last read
	quietSince := time.Now()  // when the header last changed
	// afterFinal is set when the chunk before chunkOff was flagged final:
	// then the file ending there for FinalGrace ends the recording. A
	// writer that ends its file with a reserved chunk and then truncates
	// it (flightrec's sink does at Close) may be read mid-write, the bytes
	// after the chunk neither a reservation yet nor a chunk, and taken for
	// the start of the next chunk, which never comes.
	afterFinal := false
	for {
		h, hb, fileSize, err := fw.header(chunkOff, idx)
		if errors.Is(err, errNotYet) {
			if afterFinal && fileSize <= chunkOff && time.Since(quietSince) >= fw.opts.finalGrace() {
				return nil
			}
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
		// A chunk follows, unless the bytes after this one are reserved: a
		// writer extending the file to write more of this chunk there.
		// Bytes there that start no chunk may be this chunk's growth
		// whose header is not yet rewritten (a writer covers the new
		// space, then counts it): they are taken for a next chunk, and
		// reported bad, only once the header has stood still for
		// FinalGrace.
		next := false
		if h.Finished() && fileSize > end {
			switch fw.after(end) {
			case afterChunk:
				next = true
			case afterOther:
				next = time.Since(quietSince) >= fw.opts.finalGrace()
			}
		}
		final := h.Finished() && !next && h.Flags&FlagFinalChunk != 0 && time.Since(quietSince) >= fw.opts.finalGrace()
		if hb != last || next || final {
			if hb != last {
				quietSince = time.Now()
			}
			last = hb
			if skip, err = fw.deliver(chunkOff, idx, h, hb[:], skip, next || final); err != nil {
				return err
			}
		}
		switch {
		case next:
			chunkOff, idx, skip, last = end, idx+1, HeaderSize, [HeaderSize]byte{}
			quietSince = time.Now()
			afterFinal = h.Flags&FlagFinalChunk != 0
		case final:
			return nil
		default:
			if err := fw.wait(); err != nil {
				return err
			}
		}
	}
}

// deliver hands fn the chunk's records from skip up to the end of its
// last flush, or of the chunk if whole, and returns where they end. It
// reads from the file only the bytes it has not read yet: those up to the
// last flush do not change (a writer may rewrite those after it, as
// flightrec's file sink does with its reservation).
func (fw *follower) deliver(chunkOff int64, idx int, h Header, hb []byte, skip int64, whole bool) (int64, error) {
	if fw.chunk != idx {
		fw.live.Start(idx, chunkOff)
		fw.buf, fw.chunk = fw.buf[:0], idx
	}
	end := h.Size
	if !whole {
		var err error
		if end, err = fw.flushEnd(chunkOff, h); err != nil {
			return skip, err
		}
	}
	if end <= skip {
		return skip, nil
	}
	if have := int64(len(fw.buf)); end > have {
		fw.buf = slices.Grow(fw.buf, int(end-have))[:end]
		if _, err := fw.f.ReadAt(fw.buf[have:], chunkOff+have); err != nil {
			fw.buf = fw.buf[:have]
			return skip, err
		}
	}
	if _, err := fw.live.Extend(hb, fw.buf[:end]); err != nil {
		return skip, err
	}
	if err := fw.live.LoadConstants(); err != nil {
		return skip, err
	}
	if err := fw.fn(fw.live.Reader(skip, end)); err != nil {
		return skip, err
	}
	return end, nil
}

// flushEnd returns where the chunk's last flush ends: after its latest
// checkpoint or its metadata, whichever is later, reading only the sizes
// of those records. A bad offset is left to the reader to report.
func (fw *follower) flushEnd(chunkOff int64, h Header) (int64, error) {
	end := int64(HeaderSize)
	for _, off := range []int64{h.ConstantPoolOffset, h.MetadataOffset} {
		if off < HeaderSize || off >= h.Size {
			continue
		}
		var b [leb128.MaxLen]byte
		n, err := fw.f.ReadAt(b[:min(int64(len(b)), h.Size-off)], chunkOff+off)
		if err != nil && n == 0 {
			return 0, err
		}
		if size, k := leb128.Uvarint(b[:n]); k > 0 && size > 0 && size <= uint64(h.Size-off) {
			end = max(end, off+int64(size))
		}
	}
	return end, nil
}

func (o *FollowOptions) readerOptions() *ReaderOptions {
	if o == nil {
		return nil
	}
	return o.Reader
}

// What the bytes after a finished chunk are (follower.after).
type afterKind int

const (
	afterReserved afterKind = iota // a hole or a reservation page
	afterChunk                     // a chunk's magic
	afterOther                     // neither (yet)
)

// after tells, in one read, what the bytes at off, where a chunk would
// start, are: a hole (zeros where its magic would be) or a reservation
// page (IsReservation), that is a writer extending the file to write more
// of the chunk before there; the magic of the next chunk; or neither.
func (fw *follower) after(off int64) afterKind {
	var b [128]byte
	n, _ := fw.f.ReadAt(b[:], off)
	switch {
	case n >= 4 && [4]byte(b[:4]) == [4]byte{} || IsReservation(b[:n]):
		return afterReserved
	case n >= 4 && [4]byte(b[:4]) == Magic:
		return afterChunk
	}
	return afterOther
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
func (fw *follower) header(off int64, idx int) (Header, [HeaderSize]byte, int64, error) {
	for try := 0; ; try++ {
		st, err := fw.f.Stat()
		if err != nil {
			return Header{}, [HeaderSize]byte{}, 0, err
		}
		size := st.Size()
		if size < off+HeaderSize {
			// The rest of the header may come, unless the bytes there
			// already cannot start one.
			var b [len(Magic)]byte
			n, _ := fw.f.ReadAt(b[:], off)
			if !bytes.HasPrefix(Magic[:], b[:n]) && !bytes.Equal(b[:n], make([]byte, n)) {
				return Header{}, [HeaderSize]byte{}, size, &FormatError{Chunk: idx, Offset: off, Err: ErrNotJFR}
			}
			return Header{}, [HeaderSize]byte{}, size, errNotYet
		}
		var b [HeaderSize]byte
		var state [1]byte
		if _, err := fw.f.ReadAt(b[:], off); err != nil {
			return Header{}, [HeaderSize]byte{}, size, err
		}
		if _, err := fw.f.ReadAt(state[:], off+64); err != nil {
			return Header{}, [HeaderSize]byte{}, size, err
		}
		if b[64] == 255 || state[0] != b[64] {
			if try < 10 {
				time.Sleep(time.Millisecond)
				continue
			}
			return Header{}, [HeaderSize]byte{}, size, errNotYet
		}
		if [4]byte(b[:4]) == [4]byte{} {
			return Header{}, [HeaderSize]byte{}, size, errNotYet // a hole the header goes in
		}
		if [4]byte(b[:4]) == Magic && b[64] != 0 && [8]byte(b[24:32]) == [8]byte{} {
			return Header{}, [HeaderSize]byte{}, size, errNotYet // in progress, before its first flush
		}
		h, err := parseHeader(b[:])
		if err != nil {
			return Header{}, [HeaderSize]byte{}, size, &FormatError{Chunk: idx, Offset: off, Err: fmt.Errorf("chunk header: %w", err)}
		}
		if h.Size > fw.opts.readerOptions().maxChunkSize() {
			return Header{}, [HeaderSize]byte{}, size, &FormatError{Chunk: idx, Offset: off + 8, Err: fmt.Errorf("%w: chunk size %d exceeds the maximum %d", ErrLimit, h.Size, fw.opts.readerOptions().maxChunkSize())}
		}
		return h, b, size, nil
	}
}
