package ctlproto

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/flightrec/flightrec/jfr"
)

// FuzzFrame reads frames from any bytes, as the agent reads a request and
// a client a response or a stream: no input may panic, make ReadFrame
// allocate much more than it was sent, or give a body that does not
// match its header; a segment that parses encodes back to its body, its
// parts inside the chunk and in order; a request that decodes encodes
// and decodes to itself.
func FuzzFrame(f *testing.F) {
	var b bytes.Buffer
	WriteJSON(&b, Request{Version: Version, Command: CmdStart, Name: "x", Options: []string{"app.A#threshold=10ms"}})
	f.Add(b.Bytes())
	header := bytes.Repeat([]byte{7}, jfr.HeaderSize)
	seg := AppendPart(AppendPart(AppendSegmentHead(nil, 3, 200, header), 68, []byte("abc")), 100, []byte("de"))
	b.Reset()
	WriteFrame(&b, KindSegment, seg)
	f.Add(b.Bytes())
	f.Add([]byte{KindJSON, 0xff, 0xff, 0xff, 0xff, '{'})
	f.Add([]byte{KindSegment, 0, 0, 0, 9, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		kind, body, err := ReadFrame(bytes.NewReader(data), MaxFrame)
		if err != nil {
			return
		}
		if len(body)+5 > len(data) || !bytes.Equal(body, data[5:5+len(body)]) {
			t.Fatalf("body of %d bytes from %d bytes of input", len(body), len(data))
		}
		if cap(body) > 2*len(data)+1<<20 {
			t.Fatalf("%d bytes allocated for %d bytes of input", cap(body), len(data))
		}
		switch kind {
		case KindSegment:
			var s Segment
			if ParseSegment(body, &s) != nil {
				return
			}
			again := AppendSegmentHead(nil, s.Chunk, s.Size, s.Header)
			end := int64(jfr.HeaderSize)
			for _, p := range s.Parts {
				if p.Offset < end || p.Offset+int64(len(p.Data)) > s.Size {
					t.Fatalf("part at %d of %d bytes: after %d, in %d?", p.Offset, len(p.Data), end, s.Size)
				}
				end = p.Offset + int64(len(p.Data))
				again = AppendPart(again, p.Offset, p.Data)
			}
			if !bytes.Equal(again, body) {
				t.Fatalf("segment %+v encodes to %q, not %q", s, again, body)
			}
		case KindJSON:
			var req Request
			if json.Unmarshal(body, &req) != nil {
				return
			}
			enc, err := json.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			var back Request
			if err := json.Unmarshal(enc, &back); err != nil {
				t.Fatalf("%s: %v", enc, err)
			}
			if again, _ := json.Marshal(back); !bytes.Equal(again, enc) {
				t.Fatalf("request %s decodes to %s", enc, again)
			}
		default:
			t.Fatalf("frame of kind %#x", kind)
		}
	})
}

// FuzzParse checks the option values of ctl and FLIGHTREC_START: a size
// or duration is never negative, and one that parses with a unit is that
// many of the unit (no silent overflow).
func FuzzParse(f *testing.F) {
	for _, s := range []string{"100", "500k", "2G", "30s", "2d", "1m30s", "106752d", "9223372036854775807", "-1", "13:05:07", "-10m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := ParseSize(s); err == nil && n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
		if d, err := ParseDuration(s); err == nil {
			if d < 0 {
				t.Fatalf("ParseDuration(%q) = %v", s, d)
			}
		}
	})
}
