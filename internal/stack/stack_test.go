package stack

import (
	"runtime"
	"strings"
	"testing"
)

func TestGoid(t *testing.T) {
	if got, want := Goid(), goidSlow(); got != want {
		t.Fatalf("Goid = %d, runtime.Stack says %d", got, want)
	}
	ch := make(chan [2]uint64)
	go func() { ch <- [2]uint64{Goid(), goidSlow()} }()
	if r := <-ch; r[0] != r[1] {
		t.Fatalf("Goid = %d, runtime.Stack says %d", r[0], r[1])
	}
}

//go:noinline
func deep(n int, pcs *PCs) int {
	if n == 0 {
		return Capture(0, pcs)
	}
	return deep(n-1, pcs) + 0
}

func TestCaptureMatchesCallers(t *testing.T) {
	var pcs PCs
	n := deep(5, &pcs)
	var names []string
	fr := runtime.CallersFrames(pcs[:n])
	for {
		f, more := fr.Next()
		names = append(names, f.Function)
		if !more {
			break
		}
	}
	if len(names) < 7 || !strings.HasSuffix(names[0], ".deep") || !strings.HasSuffix(names[6], ".TestCaptureMatchesCallers") {
		t.Fatalf("frames: %v", names)
	}
	if Hash(pcs[:n]) == Hash(pcs[1:n]) {
		t.Fatal("hash ignores frames")
	}
}

func TestGoidAllocs(t *testing.T) {
	if n := testing.AllocsPerRun(1000, func() { Goid() }); n != 0 {
		t.Fatalf("Goid allocates %v times", n)
	}
}

//go:noinline
func captureHere(pcs *PCs) int { return Capture(0, pcs) }

// inlinedCall is inlined into callsInlined, whose physical frame then
// holds two frames.
func inlinedCall(pcs *PCs) int { return captureHere(pcs) }

//go:noinline
func callsInlined(pcs *PCs) int { return inlinedCall(pcs) + 0 }

// TestCapturePhysicalFrames checks that Capture stores one PC per physical
// frame, whichever unwinder it uses: expanded as the recorder does, each
// PC gives its inlined frames once.
func TestCapturePhysicalFrames(t *testing.T) {
	var pcs PCs
	n := callsInlined(&pcs)
	var names []string
	for _, pc := range pcs[:n] {
		fr := runtime.CallersFrames([]uintptr{pc, 0})
		for {
			f, more := fr.Next()
			if f.Function != "" {
				names = append(names, f.Function[strings.LastIndexByte(f.Function, '.')+1:])
			}
			if !more {
				break
			}
		}
	}
	if len(names) < 4 || names[0] != "captureHere" || names[1] != "inlinedCall" || names[2] != "callsInlined" || names[3] != "TestCapturePhysicalFrames" {
		t.Fatalf("frames: %v", names)
	}
}

func TestCaptureAllocs(t *testing.T) {
	var pcs PCs
	if n := testing.AllocsPerRun(1000, func() { Capture(0, &pcs) }); n != 0 {
		t.Fatalf("Capture allocates %v times", n)
	}
}
