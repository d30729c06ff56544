package cgotest

import (
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/flightrec/flightrec/internal/stack"
)

// TestCaptureInCallbackFromC captures stacks in Go called back from C
// that left in the frame-pointer register an unmapped address, a pointer
// to a fake frame chain on the heap, and 0: the unwinder must neither
// fault nor return PCs outside Go code, and the stack must start in the
// callback.
func TestCaptureInCallbackFromC(t *testing.T) {
	if !Available {
		t.Skip("needs cgo on amd64")
	}
	// A fake chain: each "frame" points at the next, with return
	// addresses that are no code.
	fake := make([]uintptr, 64)
	for i := 0; i+2 < len(fake); i += 2 {
		fake[i] = uintptr(unsafe.Pointer(&fake[i+2]))
		fake[i+1] = 0x1234 + uintptr(i)
	}
	for _, c := range []struct {
		name string
		fp   uintptr
	}{
		{"unmapped", 0xdead0000},
		{"heap", uintptr(unsafe.Pointer(&fake[0]))},
		{"zero", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var pcs stack.PCs
			n := 0
			CallFromC(c.fp, func() { n = stack.Capture(0, &pcs) })
			if n == 0 {
				t.Fatal("no frames")
			}
			var names []string
			for _, pc := range pcs[:n] {
				f := runtime.FuncForPC(pc - 1)
				if f == nil {
					t.Fatalf("PC %#x is no Go code (frames %v)", pc, names)
				}
				names = append(names, f.Name())
			}
			if !strings.Contains(names[0], "TestCaptureInCallbackFromC") {
				t.Fatalf("the stack starts in %s, want the callback: %v", names[0], names)
			}
			runtime.KeepAlive(fake)
		})
	}
}
