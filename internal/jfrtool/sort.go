package jfrtool

import (
	"sync"

	"github.com/flightrec/flightrec/internal/mmapfile"
	"github.com/flightrec/flightrec/jfr"
)

// endTimes decodes the event of every record (which checks it) and sets its
// end time: the first field is the start and, if the type has a field named
// duration, the second is the duration (jfr's rule). A large chunk is split
// among workers. The error is that of the earliest failing event.
func endTimes(c *jfr.Chunk, recs []sortRec, workers int) error {
	const minPart = 8192
	parts := max(1, min(workers, len(recs)/minPart))
	errs := make([]error, parts)
	decode := func(w int) error {
		var ev jfr.Event
		lo, hi := w*len(recs)/parts, (w+1)*len(recs)/parts
		for i := lo; i < hi; i++ {
			if err := c.DecodeEvent(recs[i].rec, &ev); err != nil {
				return err
			}
			recs[i].end = ev.StartTicks() + ev.DurationTicks()
		}
		return nil
	}
	if parts == 1 {
		errs[0] = decode(0)
	} else {
		var wg sync.WaitGroup
		for w := range parts {
			// A worker reads the recording, which may be a mapped file.
			wg.Go(func() { errs[w] = mmapfile.Protect(func() error { return decode(w) }) })
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// sortByEnd sorts recs by end time, stably (records of equal end time keep
// their order), as jfr orders a chunk's events. It is an LSD radix sort on
// the end times' offsets from the smallest, a byte at a time, skipping the
// bytes all keys share: a chunk of 236k events sorts in a few milliseconds,
// where a comparison sort takes 20. tmp is scratch space; both slices are
// returned for reuse, the sorted one first.
func sortByEnd(recs, tmp []sortRec) (sorted, scratch []sortRec) {
	if len(recs) < 2 {
		return recs, tmp
	}
	lo, hi := recs[0].end, recs[0].end
	for _, r := range recs {
		lo = min(lo, r.end)
		hi = max(hi, r.end)
	}
	span := uint64(hi - lo)
	if cap(tmp) < len(recs) {
		tmp = make([]sortRec, len(recs))
	}
	tmp = tmp[:len(recs)]
	src, dst := recs, tmp
	for shift := uint(0); shift < 64 && span>>shift != 0; shift += 8 {
		var count [256]int
		for _, r := range src {
			count[byte(uint64(r.end-lo)>>shift)]++
		}
		if count[byte(uint64(src[0].end-lo)>>shift)] == len(src) {
			continue // every key has the same byte here
		}
		pos := 0
		for i, c := range count {
			count[i] = pos
			pos += c
		}
		for _, r := range src {
			d := byte(uint64(r.end-lo) >> shift)
			dst[count[d]] = r
			count[d]++
		}
		src, dst = dst, src
	}
	return src, dst
}
