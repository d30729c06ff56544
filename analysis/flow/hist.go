package flow

import (
	"fmt"
	"math/bits"
	"slices"
)

// dist is a distribution of durations in ns: count, mean, min, max and
// nearest-rank percentiles. The first exactSamples values are kept, so
// small runs get exact percentiles; beyond that the values go into
// log-linear buckets 1/128 of a power of two wide (percentiles within
// 0.8%, reported as the bucket's middle, clamped to min and max), so a
// distribution of ten million values costs a few KiB.
type dist struct {
	n        int64
	sum      float64
	min, max int64
	samples  []int64
	buckets  []uint64 // nil while samples are kept
}

const (
	exactSamples = 4096
	subBits      = 7
)

func (d *dist) add(v int64) {
	if d.n == 0 || v < d.min {
		d.min = v
	}
	if d.n == 0 || v > d.max {
		d.max = v
	}
	d.n++
	d.sum += float64(v)
	if d.buckets == nil {
		if len(d.samples) < exactSamples {
			d.samples = append(d.samples, v)
			return
		}
		for _, s := range d.samples {
			d.bucket(s)
		}
		d.samples = nil
	}
	d.bucket(v)
}

// bucket counts v; values below 0 (clock residue) count as 0.
func (d *dist) bucket(v int64) {
	i := bucketOf(max(v, 0))
	if i >= len(d.buckets) {
		d.buckets = append(d.buckets, make([]uint64, i+1-len(d.buckets))...)
	}
	d.buckets[i]++
}

func bucketOf(v int64) int {
	if v < 1<<subBits {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - 1 - subBits
	return e<<subBits + int(v>>e)
}

// bucketMid returns the middle of bucket i.
func bucketMid(i int) int64 {
	if i < 1<<subBits {
		return int64(i)
	}
	e := i>>subBits - 1
	m := int64(i - e<<subBits)
	return m<<e + (int64(1)<<e)/2
}

// quantile returns the nearest-rank q-quantile.
func (d *dist) quantile(q float64) int64 {
	if d.n == 0 {
		return 0
	}
	rank := max(int64(q*float64(d.n)+0.999999999), 1)
	if d.buckets == nil {
		s := slices.Clone(d.samples)
		slices.Sort(s)
		return s[rank-1]
	}
	var seen int64
	for i, c := range d.buckets {
		seen += int64(c)
		if seen >= rank {
			return min(max(bucketMid(i), d.min), d.max)
		}
	}
	return d.max
}

func (d *dist) mean() float64 { return d.sum / float64(d.n) }

// String prints "n N, mean M, p50 P, p90 P, p99 P, max X", times with the
// precision that matters.
func (d *dist) String() string {
	if d.n == 0 {
		return "n 0"
	}
	return fmt.Sprintf("n %d, mean %s, p50 %s, p90 %s, p99 %s, max %s", d.n, formatNs(int64(d.mean()+0.5)),
		formatNs(d.quantile(0.5)), formatNs(d.quantile(0.9)), formatNs(d.quantile(0.99)), formatNs(d.max))
}

// DistJSON is a distribution of durations in the --json reports.
type DistJSON struct {
	Count  int64   `json:"count"`
	MeanNs float64 `json:"meanNs"`
	MinNs  int64   `json:"minNs"`
	P50Ns  int64   `json:"p50Ns"`
	P90Ns  int64   `json:"p90Ns"`
	P99Ns  int64   `json:"p99Ns"`
	MaxNs  int64   `json:"maxNs"`
}

func (d *dist) json() *DistJSON {
	if d == nil || d.n == 0 {
		return nil
	}
	return &DistJSON{Count: d.n, MeanNs: d.mean(), MinNs: d.min, P50Ns: d.quantile(0.5), P90Ns: d.quantile(0.9),
		P99Ns: d.quantile(0.99), MaxNs: d.max}
}
