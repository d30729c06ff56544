package gzipped

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"testing"
)

func TestNewReader(t *testing.T) {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte("FLR\x00 chunk"))
	zw.Close()
	for _, tc := range []struct {
		name, in, want string
		compressed     bool
		err            string
	}{
		{name: "plain", in: "FLR\x00 chunk", want: "FLR\x00 chunk"},
		{name: "empty", in: "", want: ""},
		{name: "one byte", in: "\x1f", want: "\x1f"},
		{name: "compressed", in: z.String(), want: "FLR\x00 chunk", compressed: true},
		{name: "bad header", in: "\x1f\x8b\x07", err: "bad header: gzip header: unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, compressed, err := NewReader(tc.name, bufio.NewReader(strings.NewReader(tc.in)))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want || compressed != tc.compressed {
				t.Errorf("read %q (compressed %v), want %q (%v)", got, compressed, tc.want, tc.compressed)
			}
		})
	}
}
