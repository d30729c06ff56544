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

//go:noinline
func viaCallers(pcs *PCs) int { return captureCallers(0, pcs) }

//go:noinline
func captureBoth(a, b *PCs) (int, int) { return Capture(0, a), viaCallers(b) }

func inlinedBoth(a, b *PCs) (int, int) { return captureBoth(a, b) }

//go:noinline
func callsInlinedBoth(a, b *PCs) (int, int) { return inlinedBoth(a, b) }

// TestCallersMatchFramePointers checks that the runtime.Callers path
// (FLIGHTREC_STACK=callers, other platforms) gives the frame-pointer
// unwinder's PCs, through an inlined frame too, up to the test function.
// (Above it the Callers path leaves out wrappers such as the go
// statement's in testing, which frame pointers keep.) The first PCs are
// the two call sites in captureBoth.
func TestCallersMatchFramePointers(t *testing.T) {
	var a, b PCs
	na, nb := callsInlinedBoth(&a, &b)
	if na < 3 || nb < 3 {
		t.Fatalf("Capture gave %d PCs, the Callers path %d", na, nb)
	}
	for i := 1; i < 3; i++ {
		if a[i] != b[i] {
			t.Fatalf("frame %d: Capture %#x, the Callers path %#x (frame pointers %v)", i, a[i], b[i], FramePointers())
		}
	}
	if f := runtime.FuncForPC(a[2] - 1); f == nil || !strings.HasSuffix(f.Name(), ".TestCallersMatchFramePointers") {
		t.Fatalf("frame 2 is not the test function")
	}
}

// BenchmarkCapture captures 40 frames by each path.
func BenchmarkCapture(b *testing.B) {
	paths := []struct {
		name    string
		capture func(*PCs) int
	}{{"Capture", func(p *PCs) int { return Capture(0, p) }}, {"callers", viaCallers}}
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			var pcs PCs
			n := 0
			atDepth(38, func() {
				for b.Loop() {
					n = p.capture(&pcs)
				}
			})
			b.ReportMetric(float64(n), "frames")
		})
	}
}

//go:noinline
func atDepth(n int, f func()) {
	if n == 0 {
		f()
		return
	}
	atDepth(n-1, f)
}
