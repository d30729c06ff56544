package flow

import "testing"

// TestDist checks exact percentiles on few values and bucketed ones (within
// 1%) on many.
func TestDist(t *testing.T) {
	var d dist
	for v := int64(1); v <= 100; v++ {
		d.add(v * 1000)
	}
	if d.quantile(0.5) != 50000 || d.quantile(0.9) != 90000 || d.quantile(0.99) != 99000 || d.max != 100000 || d.mean() != 50500 {
		t.Errorf("exact: p50 %d p90 %d p99 %d max %d mean %v", d.quantile(0.5), d.quantile(0.9), d.quantile(0.99), d.max, d.mean())
	}
	var big dist
	for v := int64(1); v <= 1_000_000; v++ {
		big.add(v * 10)
	}
	for _, c := range []struct {
		q    float64
		want int64
	}{{0.5, 5_000_000}, {0.9, 9_000_000}, {0.99, 9_900_000}} {
		got := big.quantile(c.q)
		if got < c.want*99/100 || got > c.want*101/100 {
			t.Errorf("p%v = %d, want %d within 1%%", c.q*100, got, c.want)
		}
	}
	if big.samples != nil || len(big.buckets) > 4000 {
		t.Errorf("%d samples kept, %d buckets", len(big.samples), len(big.buckets))
	}
	for _, v := range []int64{0, 1, 127, 128, 129, 255, 256, 1000, 1 << 20, 1<<40 + 12345} {
		if m := bucketMid(bucketOf(v)); m < v-v/128-1 || m > v+v/128+1 {
			t.Errorf("bucket of %d has middle %d", v, m)
		}
	}
}
