package jfrstack

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/internal/testrec"
	"github.com/flightrec/flightrec/jfr"
)

// TestStacksByContent checks that stacks of a multi-chunk recording get one
// id per content, whatever chunk (and pool key) they come from.
func TestStacksByContent(t *testing.T) {
	data := testrec.Bytes(t, "jdk17-sample-multichunk.jfr.gz")
	tab := New()
	byText := map[string]uint32{}
	chunks := map[int]int{}
	r := jfr.NewBytesReader(data, nil)
	var ev jfr.Event
	for {
		err := r.ReadEvent(&ev)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		i := StackField(ev.Type)
		if i < 0 {
			continue
		}
		id := tab.Stack(&ev, i)
		if chunks[ev.Chunk.Index]++; chunks[ev.Chunk.Index] > 3000 {
			continue // enough of this chunk: rendering each stack is slow
		}
		text := direct(ev.Fields[i])
		if prev, ok := byText[text]; ok && prev != id {
			t.Fatalf("stack %q has ids %d and %d", text, prev, id)
		}
		byText[text] = id
		if got := tab.text(id); got != text {
			t.Fatalf("stack %d reads back as %q, want %q", id, got, text)
		}
	}
	if len(chunks) < 2 || len(byText) < 20 {
		t.Fatalf("only %d chunks, %d stacks: not a useful test", len(chunks), len(byText))
	}
	ids := map[uint32]bool{}
	for _, id := range byText {
		ids[id] = true
	}
	if len(ids) != len(byText) {
		t.Errorf("%d ids for %d distinct stacks", len(ids), len(byText))
	}
}

// direct renders a stack trace straight from the values.
func direct(v jfr.Value) string {
	st := v.Resolve()
	if st.Kind() != jfr.KindStruct {
		return ""
	}
	var b strings.Builder
	fr, _ := st.Field("frames")
	for _, f := range fr.Resolve().Elems() {
		m, _ := f.Field("method")
		ln, _ := f.Field("lineNumber")
		b.WriteString(MethodName(m) + ":" + strconv.FormatInt(max(ln.Int(), 0), 10) + ";")
	}
	if tr, _ := st.Field("truncated"); tr.Bool() {
		b.WriteString("...")
	}
	return b.String()
}

func (t *Table) text(id uint32) string {
	var b strings.Builder
	for _, f := range t.Frames(id) {
		fr := t.Frame(f)
		b.WriteString(t.Funcs[fr.Func] + ":" + strconv.Itoa(int(fr.Line)) + ";")
	}
	if t.Truncated(id) {
		b.WriteString("...")
	}
	return b.String()
}

func TestClassNames(t *testing.T) {
	data := testrec.Bytes(t, "jdk17-sample.jfr.gz")
	r := jfr.NewBytesReader(data, nil)
	var ev jfr.Event
	seen := map[string]bool{}
	for {
		err := r.ReadEvent(&ev)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type.Name == "jdk.ObjectAllocationSample" {
			c, _ := ev.Field("objectClass")
			seen[ClassName(c)] = true
		}
	}
	for _, want := range []string{"byte[]", "java.lang.Object[]", "Sample$WorkEvent"} {
		if !seen[want] {
			t.Errorf("no class %s among %v", want, seen)
		}
	}
}
