package recorder

import (
	"os"

	"github.com/flightrec/flightrec/jfr"
)

// fileSink writes a recording's chunks to its file, segment by segment:
// each segment's bytes first, then the chunk header that covers them.
type fileSink struct {
	f        *os.File
	size     int64 // bytes written
	chunkOff int64 // offset of the chunk being written, or last written; -1: none
	hdr      [jfr.HeaderSize]byte
}

func createFileSink(path string) (*fileSink, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &fileSink{f: f, chunkOff: -1}, nil
}

// write appends a segment and rewrites its chunk's header, marked as the
// file's last chunk (the chunk before loses that mark).
func (s *fileSink) write(seg segment) error {
	if seg.first {
		if s.chunkOff >= 0 {
			if _, err := s.f.WriteAt([]byte{0, jfr.FlagCompressedInts}, s.chunkOff+66); err != nil {
				return err
			}
		}
		s.chunkOff = s.size
	}
	for _, p := range seg.parts {
		n, err := s.f.WriteAt(p, s.size)
		s.size += int64(n)
		if err != nil {
			return err
		}
	}
	copy(s.hdr[:], seg.header)
	s.hdr[67] |= jfr.FlagFinalChunk
	_, err := s.f.WriteAt(s.hdr[:], s.chunkOff)
	return err
}

// close closes the file.
func (s *fileSink) close(ok bool) error { return s.f.Close() }
