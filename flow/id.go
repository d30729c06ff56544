package flow

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/flightrec/flightrec/internal/flowspec"
)

// ID is a compact message ID: a 16-bit node number and a 48-bit counter.
// The zero ID means none.
type ID int64

// MakeID returns the ID of the counter-th message of node.
func MakeID(node uint16, counter uint64) ID { return ID(flowspec.MessageID(node, counter)) }

// Node returns the number of the node that made the ID.
func (id ID) Node() uint16 { n, _ := flowspec.SplitMessageID(int64(id)); return n }

// Counter returns the ID's per-node counter.
func (id ID) Counter() uint64 { _, c := flowspec.SplitMessageID(int64(id)); return c }

// String returns "node:counter", the form flightrec flow prints.
func (id ID) String() string {
	return strconv.FormatUint(uint64(id.Node()), 10) + ":" + strconv.FormatUint(id.Counter(), 10)
}

// ParseID parses the "node:counter" form of an ID.
func ParseID(s string) (ID, error) {
	n, c, ok := strings.Cut(s, ":")
	if !ok {
		return 0, fmt.Errorf("flow: message ID %q is not node:counter", s)
	}
	node, err := strconv.ParseUint(n, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("flow: message ID %q: %w", s, err)
	}
	cnt, err := strconv.ParseUint(c, 10, 48)
	if err != nil {
		return 0, fmt.Errorf("flow: message ID %q: %w", s, err)
	}
	return MakeID(uint16(node), cnt), nil
}

// MaxFrame is the largest payload ReadFrame accepts.
const MaxFrame = 16 << 20

// ErrFrameTooLarge is returned by ReadFrame for a frame over MaxFrame.
var ErrFrameTooLarge = errors.New("flow: frame too large")

// WriteFrame writes one frame of a length-framed protocol: a 4-byte
// big-endian length of what follows, the 8-byte message ID, the payload.
// It issues one Write, so concurrent writers of whole frames need only
// serialise their calls.
func WriteFrame(w io.Writer, id ID, payload []byte) error {
	if len(payload) > MaxFrame {
		return ErrFrameTooLarge
	}
	b := make([]byte, 12, 12+len(payload))
	binary.BigEndian.PutUint32(b, uint32(8+len(payload)))
	binary.BigEndian.PutUint64(b[4:], uint64(id))
	_, err := w.Write(append(b, payload...))
	return err
}

// ReadFrame reads one frame written by WriteFrame. The payload reuses buf
// when it is large enough.
func ReadFrame(r io.Reader, buf []byte) (ID, []byte, error) {
	var h [12]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[:4])
	if n < 8 {
		return 0, nil, fmt.Errorf("flow: frame length %d is shorter than its ID", n)
	}
	if n-8 > MaxFrame {
		return 0, nil, ErrFrameTooLarge
	}
	id := ID(binary.BigEndian.Uint64(h[4:]))
	if cap(buf) < int(n-8) {
		buf = make([]byte, n-8)
	}
	buf = buf[:n-8]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return id, buf, nil
}

// HeaderKey is the HTTP header, and MetadataKey the gRPC metadata key,
// that carry a message ID in its "node:counter" form (or a free-form one).
const (
	HeaderKey   = "Flightrec-Message-Id"
	MetadataKey = "flightrec-message-id"
)

// SetHeader puts id in h.
func SetHeader(h http.Header, id ID) { h.Set(HeaderKey, id.String()) }

// HeaderID returns the ID in h: a compact ID, or else the free-form text.
func HeaderID(h http.Header) (ID, string) { return splitText(h.Get(HeaderKey)) }

// SetMetadata puts id in md, a gRPC-style metadata map.
func SetMetadata(md map[string]string, id ID) { md[MetadataKey] = id.String() }

// MetadataID returns the ID in md: a compact ID, or else the free-form text.
func MetadataID(md map[string]string) (ID, string) { return splitText(md[MetadataKey]) }

func splitText(s string) (ID, string) {
	if s == "" {
		return 0, ""
	}
	if id, err := ParseID(s); err == nil {
		return id, ""
	}
	return 0, s
}
