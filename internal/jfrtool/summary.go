package jfrtool

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flightrec/flightrec/jfr"
)

// Summary is what `jfr summary` reports: the first chunk's version and
// start, the number of chunks, their total duration and, per record type,
// the number of records and their bytes.
type Summary struct {
	Major, Minor  uint16
	Chunks        int
	Start         time.Time
	DurationNanos int64
	Rows          []SummaryRow // in jfr's order
	// nameWidth is the longest event type name jfr pads the column to:
	// the declared types' only, not the rows jfr adds for the metadata,
	// checkpoints or undeclared types, which may overflow it.
	nameWidth int
}

// SummaryRow counts the records of one type. The metadata and checkpoint
// records are counted as "jdk.Metadata" and "jdk.CheckPoint".
type SummaryRow struct {
	TypeID int64
	Name   string
	Count  int64
	Size   int64
}

// Summarize reads every chunk of r. On a format error it returns the
// summary of the chunks read completely before it, and the error.
func Summarize(r *jfr.Reader) (*Summary, error) {
	var z summarizer
	for {
		cc, err := countChunk(r)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return z.finish(), err
		}
		z.add(cc)
	}
}

// SummarizeAt summarizes the recording of the given size in ra (a file),
// counting its chunks on up to workers goroutines. Like jfr summary, it
// reads only the chunk headers, the metadata and each record's size and
// type: the chunks are walked a window at a time and their contents are
// never held in memory. The result is the same as Summarize's.
func SummarizeAt(ra io.ReaderAt, size int64, workers int) (*Summary, error) {
	spans, scanErr := jfr.ScanChunksAt(ra, size, nil)
	// Resolve every chunk's metadata first, in order, by the JDK's rule
	// (an id equal to the previous chunk's is the same metadata). This is
	// cheap: the JVM repeats one metadata record, parsed once.
	cache := jfr.NewMetadataCache()
	errs := make([]error, len(spans))
	counts := make([]*chunkCount, len(spans))
	var prev *jfr.Metadata
	for i := range spans {
		md, err := jfr.ChunkMetadataAt(ra, spans[i], prev, cache)
		if err != nil {
			errs[i] = err
			spans = spans[:i+1] // nothing after the first bad chunk counts
			break
		}
		counts[i] = &chunkCount{header: spans[i].Header, events: eventTypesInJDKOrder(md), sparse: map[int64][2]int64{}}
		prev = md
	}
	var wg sync.WaitGroup
	next := make(chan int, len(spans))
	for i := range spans {
		if errs[i] == nil {
			next <- i
		}
	}
	close(next)
	for range max(1, min(workers, len(spans))) {
		wg.Go(func() {
			var sc jfr.RecordScanner
			for i := range next {
				errs[i] = sc.Scan(ra, spans[i], counts[i].tally)
			}
		})
	}
	wg.Wait()
	var z summarizer
	for i := range spans {
		if errs[i] != nil {
			return z.finish(), errs[i]
		}
		z.add(counts[i])
	}
	return z.finish(), scanErr
}

// chunkCount is what summary needs of one chunk.
type chunkCount struct {
	header jfr.Header
	events []*jfr.Class // in the order the JDK lists them
	dense  [][2]int64   // count and bytes by type id, for small ids
	sparse map[int64][2]int64
	seen   []int64 // type ids in the order of their first record
}

// denseIDs bounds the type ids counted in a slice: every JVM's ids.
const denseIDs = 1 << 16

// countChunk reads the next chunk of r and counts its records by type.
func countChunk(r *jfr.Reader) (*chunkCount, error) {
	c, err := r.NextChunk()
	if err != nil {
		return nil, err
	}
	cc := &chunkCount{header: c.Header, events: eventTypesInJDKOrder(c.Metadata), sparse: map[int64][2]int64{}}
	var batch [512]jfr.Record
	for !r.ChunkDone() {
		n, err := r.ReadRecords(batch[:])
		if err != nil {
			return nil, err
		}
		cc.tally(batch[:n])
	}
	return cc, nil
}

// tally counts records by type.
func (cc *chunkCount) tally(recs []jfr.Record) {
	for _, rec := range recs {
		id := rec.TypeID
		if uint64(id) < denseIDs {
			if int(id) >= len(cc.dense) {
				cc.dense = append(cc.dense, make([][2]int64, int(id)+1-len(cc.dense))...)
			}
			if cc.dense[id][0] == 0 {
				cc.seen = append(cc.seen, id)
			}
			cc.dense[id][0]++
			cc.dense[id][1] += rec.Size
			continue
		}
		m, ok := cc.sparse[id]
		if !ok {
			cc.seen = append(cc.seen, id)
		}
		cc.sparse[id] = [2]int64{m[0] + 1, m[1] + rec.Size}
	}
}

// summarizer merges chunk counts the way jfr summary does: rows keyed by
// type id in a HashMap, first named by the first chunk that declares them;
// a record of a type no chunk so far declared gets a row of its own, named
// "ID (missing event metadata)", when it is met (the filler records of a
// recording cut short by a kill are such records).
type summarizer struct {
	s     Summary
	order []int64 // type ids in the order jfr's HashMap receives them
	rows  map[int64]*SummaryRow
}

func (z *summarizer) addRow(id int64, name string) {
	if _, ok := z.rows[id]; !ok {
		z.rows[id] = &SummaryRow{TypeID: id, Name: name}
		z.order = append(z.order, id)
	}
}

func (z *summarizer) init(first *jfr.Header) {
	z.rows = map[int64]*SummaryRow{}
	z.s.Major, z.s.Minor = first.Major, first.Minor
	z.s.Start = time.Unix(0, first.StartNanos).UTC()
	prefix := "jdk."
	if first.Major == 1 {
		prefix = "com.oracle.jdk."
	}
	z.addRow(0, prefix+"Metadata")
	z.addRow(1, prefix+"CheckPoint")
}

func (z *summarizer) add(cc *chunkCount) {
	if z.rows == nil {
		z.init(&cc.header)
	}
	for _, t := range cc.events {
		z.addRow(t.ID, t.Name)
		z.s.nameWidth = max(z.s.nameWidth, len(t.Name))
	}
	for _, id := range cc.seen {
		z.addRow(id, fmt.Sprintf("%d (missing event metadata)", id))
	}
	z.s.Chunks++
	z.s.DurationNanos += cc.header.DurationNanos
	merge := func(id int64, n [2]int64) {
		if row := z.rows[id]; row != nil {
			row.Count += n[0]
			row.Size += n[1]
		}
	}
	for id, n := range cc.dense {
		if n[0] > 0 {
			merge(int64(id), n)
		}
	}
	for id, n := range cc.sparse {
		merge(id, n)
	}
}

// finish orders the rows as jfr does.
func (z *summarizer) finish() *Summary {
	s := z.s
	for _, id := range javaHashMapOrder(z.order) {
		s.Rows = append(s.Rows, *z.rows[id])
	}
	// Collections.sort is stable: ties keep the HashMap's order.
	slices.SortStableFunc(s.Rows, func(a, b SummaryRow) int {
		switch {
		case a.Count > b.Count:
			return -1
		case a.Count < b.Count:
			return 1
		}
		return 0
	})
	return &s
}

// WriteText writes the summary in the layout of `jfr summary`.
func (s *Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	b.WriteString("\n")
	fmt.Fprintf(&b, " Version: %d.%d\n", s.Major, s.Minor)
	fmt.Fprintf(&b, " Chunks: %d\n", s.Chunks)
	fmt.Fprintf(&b, " Start: %s (UTC)\n", s.Start.UTC().Format("2006-01-02 15:04:05"))
	fmt.Fprintf(&b, " Duration: %d s\n", (s.DurationNanos+500_000_000)/1_000_000_000)
	b.WriteString("\n")
	const typeHeader = " Event Type"
	const header = "      Count  Size (bytes) "
	width := max(len(typeHeader), s.nameWidth)
	b.WriteString(typeHeader + strings.Repeat(" ", width-len(typeHeader)) + header + "\n")
	b.WriteString(strings.Repeat("=", width+len(header)) + "\n")
	for _, r := range s.Rows {
		fmt.Fprintf(&b, " %-*s%10d  %12d\n", width, r.Name, r.Count, r.Size)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// javaHashMapOrder returns keys (inserted in the given order into a
// java.util.HashMap<Long, ...>) in that map's iteration order: by bucket,
// and by insertion within a bucket. jfr summary lists rows of equal count
// in this order.
func javaHashMapOrder(keys []int64) []int64 {
	capacity, threshold := 16, 12
	for size := 1; size <= len(keys); size++ {
		if size > threshold {
			capacity *= 2
			threshold *= 2
		}
	}
	bucket := func(k int64) int {
		h := int32(k ^ int64(uint64(k)>>32)) // Long.hashCode
		h ^= int32(uint32(h) >> 16)          // HashMap.hash
		return int(h) & (capacity - 1)
	}
	out := slices.Clone(keys)
	slices.SortStableFunc(out, func(a, b int64) int { return bucket(a) - bucket(b) })
	return out
}

// eventTypesInJDKOrder returns the chunk's event types in the order the
// JDK's MetadataDescriptor lists them, which is the reverse of their
// declaration order (verified against jfr 17 on JDK recordings).
func eventTypesInJDKOrder(md *jfr.Metadata) []*jfr.Class {
	var out []*jfr.Class
	for i := len(md.Classes) - 1; i >= 0; i-- {
		if c := md.Classes[i]; c.IsEvent() {
			out = append(out, c)
		}
	}
	return out
}
