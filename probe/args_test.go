//go:build linux

package probe

import (
	"debug/dwarf"
	"encoding/json"
	"testing"

	"github.com/flightrec/flightrec/internal/bpf"
	"github.com/flightrec/flightrec/internal/gobin"
)

// TestFloatArgsUnavailable checks that float arguments and float fields of
// composite ones say they were not captured, in text and in JSON, rather
// than showing whatever an integer register held, and that the integer
// arguments after them still come from the right registers.
func TestFloatArgsUnavailable(t *testing.T) {
	i64 := &dwarf.IntType{BasicType: dwarf.BasicType{CommonType: dwarf.CommonType{ByteSize: 8, Name: "int"}}}
	f64 := &dwarf.FloatType{BasicType: dwarf.BasicType{CommonType: dwarf.CommonType{ByteSize: 8, Name: "float64"}}}
	pair := &dwarf.StructType{CommonType: dwarf.CommonType{ByteSize: 16, Name: "main.pair"}, StructName: "main.pair", Kind: "struct",
		Field: []*dwarf.StructField{{Name: "N", Type: i64}, {Name: "F", Type: f64, ByteOffset: 8}}}
	ps := assignParams([]gobin.Param{{Name: "x", Type: f64}, {Name: "n", Type: i64}, {Name: "p", Type: pair}})
	var regs [bpf.NumIntRegs]uint64
	regs[0], regs[1] = 7, 9 // n in RAX, p.N in RBX; RAX must not be read as x
	x, n, p := ps[0].decode(&regs, nil), ps[1].decode(&regs, nil), ps[2].decode(&regs, nil)
	if x.String() != "<unavailable: float registers are not readable from eBPF>" {
		t.Errorf("x renders as %s", x)
	}
	if n.Int != 7 || n.String() != "7" {
		t.Errorf("n = %s, want 7", n)
	}
	if p.String() != "{N: 0x9, F: <unavailable>}" {
		t.Errorf("p renders as %s", p)
	}
	got, err := json.Marshal(map[string]any{"x": x.JSON(), "n": n.JSON(), "p": p.JSON()})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"n":7,"p":{"F":"unavailable: float registers are not readable from eBPF","N":9},"x":"unavailable: float registers are not readable from eBPF"}`
	if string(got) != want {
		t.Errorf("JSON\n got %s\nwant %s", got, want)
	}
}
