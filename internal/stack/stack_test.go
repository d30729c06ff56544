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
