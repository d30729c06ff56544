package ctlproto

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Version is the protocol version; the agent refuses requests of another.
// Version 2 streams flush segments (KindSegment), where 1 sent chunks.
const Version = 2

// Frame kinds.
const (
	KindJSON    = 'J'
	KindSegment = 'S' // a stream's flush segment (segment.go)
)

// Size limits of a frame's body.
const (
	MaxRequest = 64 << 10  // what the agent reads of a request
	MaxFrame   = 256 << 20 // what a client accepts (a segment of a stream)
)

// Commands.
const (
	CmdInfo      = "info"
	CmdStart     = "start"
	CmdCheck     = "check"
	CmdConfigure = "configure"
	CmdDump      = "dump"
	CmdStop      = "stop"
	CmdStream    = "stream"
)

// Request is what the client asks. Paths are absolute: the agent opens
// and writes them with the service's permissions.
type Request struct {
	Version  int           `json:"version"`
	Command  string        `json:"command"`
	Name     string        `json:"name,omitempty"`     // recording name or id
	Settings string        `json:"settings,omitempty"` // default, profile or a .jfc file
	Filename string        `json:"filename,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`
	MaxSize  int64         `json:"maxSize,omitempty"`
	MaxAge   time.Duration `json:"maxAge,omitempty"`
	Disk     bool          `json:"disk,omitempty"`
	// Options are EVENT#SETTING=VALUE settings.
	Options []string  `json:"options,omitempty"`
	Begin   time.Time `json:"begin,omitzero"`
	End     time.Time `json:"end,omitzero"`
	Events  []string  `json:"events,omitempty"` // stream: globs
}

// Response is the agent's answer; Error is set if the request failed.
type Response struct {
	Version    int             `json:"version"`
	Error      string          `json:"error,omitempty"`
	Process    *Process        `json:"process,omitempty"`
	Recordings []RecordingInfo `json:"recordings,omitempty"`
	Message    string          `json:"message,omitempty"`
}

// Process describes the service.
type Process struct {
	PID        int    `json:"pid"`
	Program    string `json:"program"`
	GoVersion  string `json:"goVersion"`
	Recordings int    `json:"recordings"`
}

// RecordingInfo describes one recording.
type RecordingInfo struct {
	ID          int64         `json:"id"`
	Name        string        `json:"name"`
	State       string        `json:"state"`
	Destination string        `json:"destination"`
	Start       time.Time     `json:"start"`
	Duration    time.Duration `json:"duration,omitempty"` // stops after it
	MaxSize     int64         `json:"maxSize,omitempty"`
	MaxAge      time.Duration `json:"maxAge,omitempty"`
	Size        int64         `json:"size"`
	Repository  string        `json:"repository,omitempty"`
	// Settings are EVENT#SETTING=VALUE, sorted.
	Settings []string `json:"settings,omitempty"`
}

// ErrFrameTooLarge is returned for a frame over the reader's limit.
var ErrFrameTooLarge = errors.New("frame too large")

// FrameError is a malformed frame: an unknown kind, or a body shorter
// than its length. A server answers it, where a connection that fails
// before a frame's header is only closed; it looked for a "ctlproto: "
// prefix, which the ctl command then printed after its own.
type FrameError struct {
	Msg string
	Err error // the read's error, or nil
}

func (e *FrameError) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *FrameError) Unwrap() error { return e.Err }

// WriteFrame writes one frame.
func WriteFrame(w io.Writer, kind byte, body []byte) error {
	var hdr [5]byte
	hdr[0] = kind
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(body)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(body)
	return err
}

// WriteJSON writes v as a JSON frame.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return WriteFrame(w, KindJSON, b)
}

// ReadFrame reads one frame whose body is at most limit bytes. Its memory
// grows as the body arrives, so a length alone cannot make it allocate.
func ReadFrame(r io.Reader, limit int) (kind byte, body []byte, err error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	if hdr[0] != KindJSON && hdr[0] != KindSegment {
		return 0, nil, &FrameError{Msg: fmt.Sprintf("unknown frame kind %#x", hdr[0])}
	}
	n := int64(binary.BigEndian.Uint32(hdr[1:]))
	if n > int64(limit) {
		return 0, nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrFrameTooLarge, n, limit)
	}
	buf := make([]byte, 0, min(n, 1<<20))
	for int64(len(buf)) < n {
		have := len(buf)
		want := min(n, max(2*int64(have), 1<<20))
		if int64(cap(buf)) < want {
			nb := make([]byte, have, want)
			copy(nb, buf)
			buf = nb
		}
		buf = buf[:want]
		k, err := io.ReadFull(r, buf[have:])
		buf = buf[:have+k]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, nil, &FrameError{Msg: fmt.Sprintf("truncated frame (%d of %d bytes)", len(buf), n), Err: err}
		}
	}
	return hdr[0], buf, nil
}

// ReadJSON reads a JSON frame into v.
func ReadJSON(r io.Reader, limit int, v any) error {
	kind, body, err := ReadFrame(r, limit)
	if err != nil {
		return err
	}
	if kind != KindJSON {
		return fmt.Errorf("expected a JSON frame, got kind %q", kind)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("bad message: %w", err)
	}
	return nil
}
