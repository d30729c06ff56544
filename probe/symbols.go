//go:build linux

package probe

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/flightrec/flightrec/internal/gobin"
)

// Frame is a symbolised PC.
type Frame struct {
	Func   string
	PC     uint64
	Offset uint64 // from the function's entry
	Line   int    // source line, 0 when unknown
}

// Symbolize names the PCs of a captured stack with the target's
// functions. It assumes a non-PIE executable or one whose text is mapped
// at its link address; unknown PCs get an empty Func.
func (s *Session) Symbolize(pcs []uint64) []Frame {
	fns := s.byEntry()
	out := make([]Frame, 0, len(pcs))
	for i, pc := range pcs {
		f := Frame{PC: pc}
		pc -= s.loadBias
		if i > 0 {
			pc-- // a return address: look up the call instruction
		}
		j := sort.Search(len(fns), func(j int) bool { return fns[j].Entry > pc }) - 1
		if j >= 0 && pc < fns[j].End {
			f.Func, f.Offset = fns[j].Name, f.PC-s.loadBias-fns[j].Entry
			_, f.Line = s.Binary.Line(pc)
		}
		out = append(out, f)
	}
	return out
}

func (s *Session) byEntry() []gobin.Func {
	s.symOnce.Do(func() {
		s.sorted = append([]gobin.Func(nil), s.Binary.Funcs...)
		sort.Slice(s.sorted, func(i, j int) bool { return s.sorted[i].Entry < s.sorted[j].Entry })
	})
	return s.sorted
}

// loadBiasOf returns how far the kernel moved the executable of pid from
// its link addresses (non-zero for PIE): the start of its first mapping
// minus its first PT_LOAD's page.
func loadBiasOf(pid int, bin *gobin.Binary) uint64 {
	if !bin.PIE {
		return 0
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return 0
	}
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[5] != exe || f[2] != "00000000" {
			continue
		}
		lo, _, _ := strings.Cut(f[0], "-")
		start, err := strconv.ParseUint(lo, 16, 64)
		if err != nil {
			return 0
		}
		return start - bin.FirstLoad()&^0xfff
	}
	return 0
}

// String renders a frame as "func:line", "func+0xoff" or the address.
func (f Frame) String() string {
	if f.Func == "" {
		return fmt.Sprintf("%#x", f.PC)
	}
	if f.Line > 0 {
		return fmt.Sprintf("%s:%d", f.Func, f.Line)
	}
	return fmt.Sprintf("%s+%#x", f.Func, f.Offset)
}

// WriteHist prints a log2 histogram in bpftrace's hist layout.
func WriteHist(w io.Writer, h []HistBucket) { writeHist(w, h) }
