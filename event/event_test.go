package event

import (
	"fmt"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flightrec/flightrec/internal/batch"
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
	for _, want := range []string{").Begin", "(*Timed).ShouldCommit", "(*Timed).Commit", "(*gsample).Commit", "eventimpl.Pending"} {
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
	type badFieldName struct {
		Instant
		N int64 `jfr:"has space"`
	}
	type digitFieldName struct {
		Instant
		N int64 `jfr:"1n"`
	}
	type twice struct {
		Instant
		A int64 `jfr:"n"`
		B int64 `jfr:"n"`
	}
	type implicit struct {
		Instant
		Duration int64
	}
	for name, f := range map[string]func(){
		"space in name":       func() { Define[allocEv](Info{Name: "has space"}) },
		"digit first":         func() { Define[allocEv](Info{Name: "1abc"}) },
		"slash":               func() { Define[allocEv](Info{Name: "app/x"}) },
		"empty part":          func() { Define[allocEv](Info{Name: "app..X"}) },
		"no name":             func() { Define[allocEv](Info{}) },
		"java.lang.String":    func() { Define[allocEv](Info{Name: "java.lang.String"}) },
		"primitive":           func() { Define[allocEv](Info{Name: "long"}) },
		"pool type":           func() { Define[allocEv](Info{Name: "jdk.types.StackTrace"}) },
		"bad field name":      func() { Define[badFieldName](Info{Name: "test.BadFieldName"}) },
		"digit field name":    func() { Define[digitFieldName](Info{Name: "test.DigitFieldName"}) },
		"field twice":         func() { Define[twice](Info{Name: "test.Twice"}) },
		"implicit field name": func() { Define[implicit](Info{Name: "test.Implicit"}) },
		"unknown content":     func() { Define[unknownContent](Info{Name: "test.UnknownContent"}) },
		"no header":           func() { Define[noHeader](Info{Name: "test.NoHeader"}) },
		"bad field":           func() { Define[badField](Info{Name: "test.BadField"}) },
		"string timestamp":    func() { Define[stringTimestamp](Info{Name: "test.StringTimestamp"}) },
		"time as bytes":       func() { Define[timeAsBytes](Info{Name: "test.TimeAsBytes"}) },
		"duplicate":           func() { Define[allocEv](Info{Name: "test.Alloc"}) },
	} {
		func() {
			defer func() {
				r := recover()
				if r == nil {
					t.Errorf("%s: Define did not panic", name)
					return
				}
				// The panic names the line that called Define.
				if msg := fmt.Sprint(r); !strings.Contains(msg, "event_test.go:") {
					t.Errorf("%s: panic %q does not name the call site", name, msg)
				}
			}()
			f()
		}()
	}
	types, _ := batch.Types()
	for _, d := range types {
		if strings.HasPrefix(d.Name, "test.") && d.Name != "test.Alloc" && !strings.HasPrefix(d.Name, "test.Gen") {
			t.Errorf("a rejected definition registered %s", d.Name)
		}
	}
}

// TestReservedNamespaces: only flightrec's packages may define types
// named java.*, jdk.* or go.* (the Go runtime's events under the JDK's
// names); the types of the JFR table are never free.
func TestReservedNamespaces(t *testing.T) {
	for name, wantOwn := range map[string]string{
		"jdk.DataLoss":         "",
		"jdk.ExecutionSample":  "",
		"jdk.Anything":         "",
		"go.Custom":            "",
		"java.lang.Thread":     "a type JFR declares",
		"long":                 "a type JFR declares",
		"jdk.types.StackFrame": "a type JFR declares",
	} {
		err := checkTypeName(name, false)
		if err == nil {
			t.Errorf("%s: accepted from another module", name)
		}
		own := checkTypeName(name, true)
		switch {
		case wantOwn == "" && own != nil:
			t.Errorf("%s: rejected from flightrec: %v", name, own)
		case wantOwn != "" && (own == nil || !strings.Contains(own.Error(), wantOwn)):
			t.Errorf("%s: from flightrec: %v, want %q", name, own, wantOwn)
		}
	}
	for _, ok := range []string{"app.HTTPRequest", "a", "_x.$y", "app.v2.Größe"} {
		if err := checkTypeName(ok, false); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestNilType: a nil *Type (a variable whose Define has not run yet, as in
// another package's init) is a disabled type, not a crash.
func TestNilType(t *testing.T) {
	var typ *Type[allocEv]
	var ev allocEv
	typ.Begin(&ev)
	if ev.ShouldCommit() || typ.Enabled() || typ.Name() != "" {
		t.Error("a nil Type is enabled or named")
	}
	ev.Commit()
}

// TestHandleMethods: an event struct gets from its embedded handle only
// the methods a program calls; the plumbing of generated code (Record,
// which pins the goroutine) lives in package eventimpl.
func TestHandleMethods(t *testing.T) {
	for typ, want := range map[reflect.Type]string{
		reflect.TypeFor[*Instant](): "Commit SetTime ShouldCommit",
		reflect.TypeFor[*Timed]():   "Commit SetTimes ShouldCommit",
	} {
		var got []string
		for i := range typ.NumMethod() {
			got = append(got, typ.Method(i).Name)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%v has methods %v, want %s", typ, got, want)
		}
	}
}
