package ctlproto

import (
	"bytes"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/jfr"
)

func TestSegment(t *testing.T) {
	header := bytes.Repeat([]byte{7}, jfr.HeaderSize)
	body := AppendSegmentHead(nil, 3, 200, header)
	body = AppendPart(body, 68, []byte("abc"))
	body = AppendPart(body, 100, []byte("de"))
	var seg Segment
	if err := ParseSegment(body, &seg); err != nil {
		t.Fatal(err)
	}
	if seg.Chunk != 3 || seg.Size != 200 || !bytes.Equal(seg.Header, header) || len(seg.Parts) != 2 ||
		seg.Parts[0].Offset != 68 || string(seg.Parts[0].Data) != "abc" || seg.Parts[1].Offset != 100 || string(seg.Parts[1].Data) != "de" {
		t.Fatalf("%+v", seg)
	}
	head := AppendSegmentHead(nil, 1, 200, header)
	for _, c := range []struct {
		body []byte
		want string
	}{
		{body[:50], "segment of 50 bytes, shorter than its 84-byte head"},
		{AppendSegmentHead(nil, 1, 1<<40, header), "byte offset 8: chunk size 1099511627776"},
		{append(head, 1, 2), "byte offset 84: part head of 2 of 12 bytes"},
		{AppendPart(head, 10, []byte("x")), "part of 1 bytes at chunk offset 10, outside 68..200"},
		{AppendPart(head, 199, []byte("xy")), "part of 2 bytes at chunk offset 199, outside 68..200"},
		{AppendPart(AppendPart(head, 100, []byte("xy")), 101, []byte("z")), "byte offset 98: part of 1 bytes at chunk offset 101, outside 102..200"},
		{AppendPart(head, 100, []byte("xyz"))[:len(head)+14], "byte offset 84: part of 3 bytes, 2 in the frame"},
	} {
		if err := ParseSegment(c.body, &seg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}
