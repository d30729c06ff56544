package jfrtool

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
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
	s := &Summary{}
	var order []int64 // type ids in the order jfr's HashMap receives them
	rows := map[int64]*SummaryRow{}
	add := func(id int64, name string) {
		if _, ok := rows[id]; !ok {
			rows[id] = &SummaryRow{TypeID: id, Name: name}
			order = append(order, id)
		}
	}
	add(0, "jdk.Metadata")
	add(1, "jdk.CheckPoint")
	counts := map[int64][2]int64{} // the current chunk's, merged when it completes
	var err error
	for {
		var c *jfr.Chunk
		c, err = r.NextChunk()
		if err != nil {
			break
		}
		if s.Chunks == 0 {
			s.Major, s.Minor = c.Header.Major, c.Header.Minor
			s.Start = c.StartTime()
			if c.Header.Major == 1 {
				rows[0].Name, rows[1].Name = "com.oracle.jdk.Metadata", "com.oracle.jdk.CheckPoint"
			}
		}
		for _, t := range eventTypesInJDKOrder(c.Metadata) {
			add(t.ID, t.Name)
		}
		clear(counts)
		for !r.ChunkDone() {
			var rec jfr.Record
			if rec, err = r.ReadRecord(); err != nil {
				break
			}
			n := counts[rec.TypeID]
			counts[rec.TypeID] = [2]int64{n[0] + 1, n[1] + rec.Size}
		}
		if err != nil {
			break
		}
		s.Chunks++
		s.DurationNanos += c.Header.DurationNanos
		for id, n := range counts {
			if row := rows[id]; row != nil {
				row.Count += n[0]
				row.Size += n[1]
			}
		}
	}
	for _, id := range javaHashMapOrder(order) {
		s.Rows = append(s.Rows, *rows[id])
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
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return s, err
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
	width := len(typeHeader)
	for _, r := range s.Rows {
		width = max(width, len(r.Name))
	}
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
