//go:build linux

package probe

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestDurationsQuantiles(t *testing.T) {
	var d Durations
	r := rand.New(rand.NewPCG(1, 2))
	var all []uint64
	for i := 0; i < 100000; i++ {
		v := uint64(r.ExpFloat64() * 5000)
		all = append(all, v)
		d.Add(v)
	}
	slices.Sort(all)
	for _, q := range []float64{0.5, 0.9, 0.99} {
		exact := all[int(q*float64(len(all)))-1]
		got := d.Quantile(q)
		if diff := float64(got) - float64(exact); diff > float64(exact)/64+1 || -diff > float64(exact)/64+1 {
			t.Errorf("p%v = %d, exact %d: off by more than 1/64", q*100, got, exact)
		}
	}
	if d.Min != all[0] || d.Max != all[len(all)-1] || d.N != 100000 {
		t.Errorf("min %d max %d n %d", d.Min, d.Max, d.N)
	}
	var n uint64
	for _, b := range d.Log2() {
		n += b.Count
	}
	if n != d.N {
		t.Errorf("log2 histogram holds %d of %d", n, d.N)
	}
}

// TestHistLayout compares with what bpftrace 0.17's hist() printed for the
// same values (0, 1, 3, 1500, 1600, 1700).
func TestHistLayout(t *testing.T) {
	var d Durations
	for _, v := range []uint64{0, 1, 3, 1500, 1600, 1700} {
		d.Add(v)
	}
	var b bytes.Buffer
	WriteHist(&b, d.Log2())
	want := "" +
		"[0]                    1 |@@@@@@@@@@@@@@@@@                                   |\n" +
		"[1]                    1 |@@@@@@@@@@@@@@@@@                                   |\n" +
		"[2, 4)                 1 |@@@@@@@@@@@@@@@@@                                   |\n" +
		"[4, 8)                 0 |                                                    |\n" +
		"[8, 16)                0 |                                                    |\n" +
		"[16, 32)               0 |                                                    |\n" +
		"[32, 64)               0 |                                                    |\n" +
		"[64, 128)              0 |                                                    |\n" +
		"[128, 256)             0 |                                                    |\n" +
		"[256, 512)             0 |                                                    |\n" +
		"[512, 1K)              0 |                                                    |\n" +
		"[1K, 2K)               3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
