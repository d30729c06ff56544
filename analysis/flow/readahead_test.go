package flow

import (
	"bytes"
	"io"
	"reflect"
	"testing"
)

// newReadAhead, for the tests, reads src's spans ahead; next returns them. A source
// that is no batchSource is read span by span and copied.
func newReadAhead(src source) *readAhead {
	fill, ok := src.(batchSource)
	if !ok {
		fill = &copySource{source: src}
	}
	return startReadAhead(src, fill, nil)
}

// copySource makes a source a batchSource: each span is read into sp and
// copied into the batch.
type copySource struct {
	source
	sp rawSpan
}

func (c *copySource) nextInto(b *spanBatch) error {
	if err := c.source.next(&c.sp); err != nil {
		return err
	}
	b.add(&c.sp)
	return nil
}

// TestReadAheadBatches: a recording's reader appends its spans to the
// read-ahead's batches itself (batchSource), the held ones popped into
// the batch's bytes and the unfinished ones copied there; the spans the
// batches hand over are the ones next reads one at a time, field for
// field, though the reader goes on recycling its memory while a batch
// waits: whole, cut short (spans left unfinished) and with its held
// spans in the file.
func TestReadAheadBatches(t *testing.T) {
	_, rec := genJFRInputs(t, 3000)
	for _, tc := range []struct {
		name      string
		data      []byte
		blockSize int
	}{
		{"whole", rec, 0},
		{"cut", rec[:len(rec)*9/10], 0},
		{"cut, held in the file", rec[:len(rec)*9/10], 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, want, wantErr := readJFRSpans(t, tc.data, tc.blockSize)
			s := newJFRSource("n.jfr", bytes.NewReader(tc.data), io.NopCloser(nil), t.TempDir())
			if tc.blockSize > 0 {
				s.held.blockSize, s.held.keep = tc.blockSize, 0
			}
			r := newReadAhead(s)
			defer r.Close()
			got, err := readSpans(t, r)
			if err.Error() != wantErr.Error() {
				t.Fatalf("read-ahead ended with %v, want %v", err, wantErr)
			}
			if len(got) != len(want) || len(want) < readAheadSpans*readAheadBatches {
				t.Fatalf("%d spans through the read-ahead, %d read", len(got), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("span %d through the read-ahead\n%+v\nread as\n%+v", i, got[i], want[i])
				}
			}
		})
	}
}
