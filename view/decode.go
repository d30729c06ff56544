package view

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flightrec/flightrec/internal/jfrstack"
	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/jfr"
)

// decodeCache keeps the most recently used chunks loaded (metadata and
// constant pools), to decode events again for the event browser.
type decodeCache struct {
	mu     sync.Mutex
	chunks []loadedChunk // most recent last
}

type loadedChunk struct {
	file, chunk int
	c           *jfr.Chunk
}

const cachedChunks = 4

// chunkOf returns the loaded chunk holding file offset off.
func (ix *Index) chunkOf(file int, off int64) (*jfr.Chunk, jfr.ChunkSpan, error) {
	f := ix.Files[file]
	ci := sort.Search(len(f.chunks), func(i int) bool { return f.chunks[i].Offset+f.chunks[i].Size > off })
	if ci == len(f.chunks) {
		return nil, jfr.ChunkSpan{}, fmt.Errorf("offset %d is in no chunk", off)
	}
	span := f.chunks[ci]
	dc := &ix.decode
	for i, lc := range dc.chunks {
		if lc.file == file && lc.chunk == ci {
			dc.chunks = append(append(dc.chunks[:i:i], dc.chunks[i+1:]...), lc)
			return lc.c, span, nil
		}
	}
	rd := jfr.NewBytesReader(f.data[span.Offset:span.Offset+span.Size], &jfr.ReaderOptions{PerChunkClock: true})
	c, err := rd.NextChunk()
	if err != nil {
		return nil, span, fmt.Errorf("%s: chunk %d: %w", f.Name, ci, err)
	}
	if len(dc.chunks) >= cachedChunks {
		dc.chunks = dc.chunks[1:]
	}
	dc.chunks = append(dc.chunks, loadedChunk{file, ci, c})
	return c, span, nil
}

// decodeEvent decodes event i of the index into ev. The caller holds
// ix.decode.mu.
func (ix *Index) decodeEvent(i int32, ev *jfr.Event) error {
	file, off := int(ix.file[i]), ix.off[i]
	c, span, err := ix.chunkOf(file, off)
	if err != nil {
		return err
	}
	data := ix.Files[file].data[off : span.Offset+span.Size]
	size, n := leb128.Uvarint(data)
	typ, m := leb128.Uvarint(data[n:])
	if n == 0 || m == 0 {
		return fmt.Errorf("%s: bad record at %d", ix.Files[file].Name, off)
	}
	return c.DecodeEvent(jfr.Record{TypeID: int64(typ), Offset: off - span.Offset, Size: int64(size)}, ev)
}

// cellText renders a field value for the event browser.
func cellText(f *jfr.Field, v jfr.Value, clock jfr.Clock) string {
	v = v.Resolve()
	if ct, ok := f.ContentType(); ok && !f.Array {
		switch ct.Name() {
		case "jdk.jfr.Timestamp":
			var ns int64
			switch ct.Value() {
			case "TICKS":
				ns = clock.Nanos(v.Int())
			case "MILLISECONDS_SINCE_EPOCH":
				ns = v.Int() * 1e6
			default:
				ns = v.Int()
			}
			return time.Unix(0, ns).UTC().Format("15:04:05.000000000")
		case "jdk.jfr.Timespan":
			if ct.Value() == "TICKS" {
				return clock.Duration(v.Int()).String()
			}
		}
	}
	switch v.Kind() {
	case jfr.KindNull, jfr.KindInvalid:
		return ""
	case jfr.KindBool:
		return strconv.FormatBool(v.Bool())
	case jfr.KindFloat, jfr.KindDouble:
		return strconv.FormatFloat(v.Float(), 'g', 6, 64)
	case jfr.KindString:
		return v.String()
	case jfr.KindArray:
		return fmt.Sprintf("[%d]", v.Len())
	case jfr.KindStruct:
		switch c := v.Class(); {
		case c == nil:
			return ""
		case c.Name == "java.lang.Thread":
			return jfrstack.ThreadName(v)
		case c.Name == "java.lang.Class":
			return jfrstack.ClassName(v)
		case c.Name == "jdk.types.Method":
			return jfrstack.MethodName(v)
		case c.Name == "jdk.types.StackTrace":
			fr, _ := v.Field("frames")
			return fmt.Sprintf("%d frames", fr.Resolve().Len())
		}
		if s := jfrstack.Text(v); s != "" {
			return s
		}
		var parts []string
		for i, sub := range v.Elems() {
			if i >= len(v.Class().Fields) || i >= 4 {
				break
			}
			parts = append(parts, v.Class().Fields[i].Name+"="+cellText(&v.Class().Fields[i], sub, clock))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case jfr.KindRef:
		return ""
	}
	if f.Type != nil && f.Type.Name == "long" || f.Type != nil && f.Type.Name == "int" {
		if a, ok := f.Annotation("jdk.jfr.Unsigned"); ok && a.Type != nil {
			return strconv.FormatUint(v.Uint(), 10)
		}
	}
	return strconv.FormatInt(v.Int(), 10)
}
