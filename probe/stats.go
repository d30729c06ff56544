//go:build linux

package probe

import (
	"fmt"
	"io"
	"math/bits"
	"sort"
	"strings"
)

// subBits is the precision of the duration histogram: 2^subBits buckets per
// power of two, so a quantile is within 1/64 of the true value.
const subBits = 6

// Durations accumulates call durations in nanoseconds: exact count, sum,
// min and max, and a log-linear histogram for the quantiles.
type Durations struct {
	N, Sum, Min, Max uint64
	buckets          map[int]uint64
	log2             [65]uint64 // bpftrace's hist buckets: 0, 1, [2,4), [4,8), ...
}

// Add records one duration.
func (d *Durations) Add(ns uint64) {
	if d.buckets == nil {
		d.buckets = map[int]uint64{}
	}
	if d.N == 0 || ns < d.Min {
		d.Min = ns
	}
	if ns > d.Max {
		d.Max = ns
	}
	d.N++
	d.Sum += ns
	d.buckets[bucketOf(ns)]++
	d.log2[bits.Len64(ns)]++
}

func bucketOf(v uint64) int {
	if v < 1<<subBits {
		return int(v)
	}
	shift := bits.Len64(v) - subBits - 1
	return (shift+1)<<subBits + int(v>>uint(shift)) - 1<<subBits
}

// bucketMid is the middle of the values of bucket b.
func bucketMid(b int) uint64 {
	if b < 1<<subBits {
		return uint64(b)
	}
	shift := b>>subBits - 1
	lo := uint64(b&(1<<subBits-1)+1<<subBits) << uint(shift)
	return lo + (uint64(1)<<uint(shift))/2
}

// Quantile returns the q-quantile (0 < q <= 1), within 1/64 of the truth
// and clamped to [Min, Max].
func (d *Durations) Quantile(q float64) uint64 {
	if d.N == 0 {
		return 0
	}
	keys := make([]int, 0, len(d.buckets))
	for k := range d.buckets {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	rank := uint64(q*float64(d.N) + 0.5)
	rank = max(rank, 1)
	var seen uint64
	for _, k := range keys {
		seen += d.buckets[k]
		if seen >= rank {
			return min(max(bucketMid(k), d.Min), d.Max)
		}
	}
	return d.Max
}

// Mean returns the mean duration.
func (d *Durations) Mean() uint64 {
	if d.N == 0 {
		return 0
	}
	return d.Sum / d.N
}

// HistBucket is one bucket of the log2 histogram: [Lo, Hi) holds Count.
type HistBucket struct{ Lo, Hi, Count uint64 }

// Log2 returns the log2 histogram from the lowest to the highest non-empty
// bucket, as bpftrace's hist prints it.
func (d *Durations) Log2() []HistBucket {
	first, last := -1, -1
	for i, c := range d.log2 {
		if c != 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return nil
	}
	var out []HistBucket
	for i := first; i <= last; i++ {
		var lo, hi uint64
		if i > 0 {
			lo = 1 << uint(i-1)
		}
		hi = 1 << uint(i)
		if i == 0 {
			hi = 1
		}
		out = append(out, HistBucket{lo, hi, d.log2[i]})
	}
	return out
}

// writeHist prints h in bpftrace's hist layout.
func writeHist(w io.Writer, h []HistBucket) {
	var maxCount uint64
	labels := make([]string, len(h))
	width := 16 // bpftrace's label column
	for i, b := range h {
		maxCount = max(maxCount, b.Count)
		if b.Hi-b.Lo <= 1 {
			labels[i] = fmt.Sprintf("[%s]", histNum(b.Lo))
		} else {
			labels[i] = fmt.Sprintf("[%s, %s)", histNum(b.Lo), histNum(b.Hi))
		}
		width = max(width, len(labels[i]))
	}
	const barWidth = 52
	for i, b := range h {
		n := 0
		if maxCount > 0 {
			n = int(b.Count * barWidth / maxCount)
		}
		fmt.Fprintf(w, "%-*s%8d |%s%s|\n", width, labels[i], b.Count, strings.Repeat("@", n), strings.Repeat(" ", barWidth-n))
	}
}

// histNum writes a power of two with bpftrace's K/M/G/T suffixes.
func histNum(v uint64) string {
	for _, u := range []struct {
		shift  uint
		suffix string
	}{{40, "T"}, {30, "G"}, {20, "M"}, {10, "K"}} {
		if v >= 1<<u.shift && v%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", v>>u.shift, u.suffix)
		}
	}
	return fmt.Sprint(v)
}
