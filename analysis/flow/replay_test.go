package flow

import (
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
)

// readSpans reads every span of src (copies) and its final error.
func readSpans(t *testing.T, src source) ([]rawSpan, error) {
	t.Helper()
	var out []rawSpan
	b := &spanBatch{}
	var sp rawSpan
	for {
		if err := src.next(&sp); err != nil {
			return append(out, b.spans...), err
		}
		b.add(&sp)
	}
}

// TestSpanLogReplay: the spans pass 2 replays from the span log are the
// spans pass 1 read, field for field (nil and empty IDs, flags, numbers,
// times), with the same end: io.EOF for a whole recording, the damage
// error for one cut short.
func TestSpanLogReplay(t *testing.T) {
	ins, rec := genJFRInputs(t, 500)
	text, err := ins[3].Open()
	if err != nil {
		t.Fatal(err)
	}
	log, _ := io.ReadAll(text)
	// A span longer than a replay block, and many short ones after it
	// that cross the blocks' ends.
	long := "1000=1700000000000\nSPAN;null;1:1\nE;1000;main;ODStarted;1:1\nE;2000;main;Checkpoint;" +
		strings.Repeat("x", replayBlock+100) + "\n" + strings.Repeat("SPAN;null\nE;3000;main;Checkpoint;short\n", 30000)
	for _, in := range []Input{
		BytesInput("long.txt", []byte(long)),
		BytesInput("n1.jfr", rec),
		BytesInput("cut.jfr", rec[:len(rec)*9/10]),
		BytesInput("n3.txt", log),
		exampleInputs(t, "ex5")[1],
	} {
		t.Run(in.Name, func(t *testing.T) {
			src, err := openSource(in, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			want, wantErr := readSpans(t, src)
			src.Close()
			src, err = openSource(in, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			l, err := newSpanLog(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer l.remove()
			logged := &loggingSource{source: src, log: l}
			if _, err := readSpans(t, logged); err.Error() != wantErr.Error() {
				t.Fatalf("logging source ended with %v, want %v", err, wantErr)
			}
			if err := l.finish(); err != nil {
				t.Fatal(err)
			}
			rs, err := newReplaySource(l, logged.endErr)
			if err != nil {
				t.Fatal(err)
			}
			got, gotErr := readSpans(t, rs)
			if gotErr != logged.endErr {
				t.Errorf("replay ended with %v, want %v", gotErr, wantErr)
			}
			if len(got) != len(want) || len(want) == 0 {
				t.Fatalf("%d spans replayed, %d read", len(got), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("span %d replayed as\n%+v\nread as\n%+v", i, got[i], want[i])
				}
			}
		})
	}
}

// TestSpanLogsRemoved: Merge leaves no file in its temporary directory,
// whether it succeeds or refuses its inputs.
func TestSpanLogsRemoved(t *testing.T) {
	ins := exampleInputs(t, "ex5")
	for _, tc := range []struct {
		name string
		ins  []Input
		fail bool
	}{
		{"merged", ins, false},
		{"refused", append(ins[:2:2], BytesInput("empty.txt", []byte("1=1\n"))), true},
	} {
		dir := t.TempDir()
		_, err := Merge(tc.ins, &Options{TempDir: dir}, func(*Trace) error {
			return nil
		})
		if (err != nil) != tc.fail {
			t.Errorf("%s: error %v", tc.name, err)
		}
		left, rerr := os.ReadDir(dir)
		if rerr != nil || len(left) != 0 {
			t.Errorf("%s: %v left in the temporary directory (%v)", tc.name, left, rerr)
		}
	}
	if _, err := Merge(ins, &Options{TempDir: "/nonexistent/dir"}, func(*Trace) error { return nil }); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("merge with a missing temporary directory: %v", err)
	}
}

// TestOpenSpans checks the held-span index against a map through
// growth, window slides that leave spans behind and removals.
func TestOpenSpans(t *testing.T) {
	var o openSpans
	want := map[int64]*jfrSpan{}
	add := func(num int64) {
		js := &jfrSpan{num: num}
		o.put(js)
		want[num] = js
	}
	add(5) // a span that stays open for the whole run
	for num := int64(10); num < 3*openRingMax; num++ {
		add(num)
		if old := num - 3000; old >= 10 && old%7 != 0 {
			o.remove(want[old])
			delete(want, old)
		}
	}
	add(7) // a number below the window
	for num, js := range want {
		if o.get(num) != js {
			t.Fatalf("span %d not found", num)
		}
	}
	for _, num := range []int64{6, 11, 3*openRingMax + 5} {
		if o.get(num) != nil {
			t.Errorf("span %d found, never held", num)
		}
	}
	n := 0
	o.each(func(*jfrSpan) { n++ })
	if n != len(want) {
		t.Errorf("each visits %d spans, %d held", n, len(want))
	}
}

// TestSpanLogDamaged: a span log cut short on disk ends its replay with an
// error, not a panic nor a short input taken as whole.
func TestSpanLogDamaged(t *testing.T) {
	src, err := openSource(exampleInputs(t, "ex5")[1], t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l, err := newSpanLog(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer l.remove()
	logged := &loggingSource{source: src, log: l}
	want, _ := readSpans(t, logged)
	if err := l.finish(); err != nil {
		t.Fatal(err)
	}
	st, err := l.f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.f.Truncate(st.Size() - 3); err != nil {
		t.Fatal(err)
	}
	rs, err := newReplaySource(l, logged.endErr)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readSpans(t, rs)
	if !errors.Is(err, errBadSpanLog) || len(got) != len(want)-1 {
		t.Errorf("replay of a cut log: %d of %d spans, error %v", len(got), len(want), err)
	}
}
