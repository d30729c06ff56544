package event

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

type allocEv struct {
	Instant
	N int64
	S string
	K int32
}

var allocType = Define[allocEv](Info{Name: "test.Alloc"})

func TestDisabledAllocs(t *testing.T) {
	n := testing.AllocsPerRun(1000, func() {
		var ev allocEv
		allocType.Begin(&ev)
		if ev.ShouldCommit() {
			ev.N, ev.S, ev.K = 1, "hello", 42
		}
		ev.Commit()
	})
	if n != 0 {
		t.Fatalf("disabled emit allocates %v times", n)
	}
}

// TestInlining checks that Begin, ShouldCommit and Commit, generic or
// generated, inline at a call site, so a disabled event costs a load and a
// branch.
func TestInlining(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	out, err := exec.Command("go", "build", "-o", "/dev/null", "-gcflags=-m", "./testdata/inl").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, want := range []string{").Begin", "(*Timed).ShouldCommit", "(*Timed).Commit", "(*gsample).Commit", "(*Instant).Pending"} {
		found := false
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "main.go") && strings.Contains(line, "inlining call to") && strings.Contains(line, want) {
				found = true
			}
		}
		if !found {
			t.Errorf("no %q inlined in:\n%s", want, out)
		}
	}
}

func TestDefineRejects(t *testing.T) {
	type noHeader struct{ N int64 }
	type badField struct {
		Instant
		M map[string]int
	}
	// A timestamp is an int64 of ns since the epoch or a time.Time.
	type stringTimestamp struct {
		Instant
		At string `content:"timestamp"`
	}
	type timeAsBytes struct {
		Instant
		At time.Time `content:"bytes"`
	}
	type unknownContent struct {
		Instant
		N int64 `content:"parsecs"`
	}
	for name, f := range map[string]func(){
		"unknown content":  func() { Define[unknownContent](Info{Name: "test.UnknownContent"}) },
		"no header":        func() { Define[noHeader](Info{Name: "test.NoHeader"}) },
		"bad field":        func() { Define[badField](Info{Name: "test.BadField"}) },
		"string timestamp": func() { Define[stringTimestamp](Info{Name: "test.StringTimestamp"}) },
		"time as bytes":    func() { Define[timeAsBytes](Info{Name: "test.TimeAsBytes"}) },
		"duplicate":        func() { Define[allocEv](Info{Name: "test.Alloc"}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Define did not panic", name)
				}
			}()
			f()
		}()
	}
}
