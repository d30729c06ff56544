//go:build linux

package probe

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/internal/testrec"
	"github.com/flightrec/flightrec/jfr"
)

func TestEventName(t *testing.T) {
	for fn, want := range map[string]string{
		"main.work":              "flightrec.probe.main.work",
		"net/http.(*conn).serve": "flightrec.probe.net.http.__conn_.serve",
		"pkg.F[go.shape.int]":    "flightrec.probe.pkg.F_go.shape.int_",
		"x/y-z.f1":               "flightrec.probe.x.y_z.f1",
	} {
		if got := EventName(fn); got != want {
			t.Errorf("EventName(%q) = %q, want %q", fn, got, want)
		}
	}
}

// TestJFROut writes probed calls with arguments, results and stacks to a
// recording and reads it back with our reader and OpenJDK's jfr.
func TestJFROut(t *testing.T) {
	needProbes(t)
	tg := startTarget(t, buildTarget(t, ""), "work", "2", "500")
	s, err := Attach(tg.cmd.Process.Pid, Options{Funcs: []string{"main.work"}, Args: true, Stack: true, Records: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	path := filepath.Join(t.TempDir(), "probe.jfr")
	w, err := CreateJFR(path, s)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var werr error
	go func() {
		done <- s.Run(t.Context(), func(c *Call) {
			if werr == nil {
				werr = w.Write(c)
			}
		})
	}()
	tg.goRun()
	tg.finish(t)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	sums, err := s.Summaries()
	if err != nil {
		t.Fatal(err)
	}
	if werr != nil {
		t.Fatal(werr)
	}
	if err := w.Close(sums); err != nil {
		t.Fatal(err)
	}

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := jfr.NewReader(f, nil)
	var ev jfr.Event
	n := 0
	perG := map[int64]int{}
	for {
		err := r.ReadEvent(&ev)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type.Name != "flightrec.probe.main.work" {
			t.Fatalf("event type %s", ev.Type.Name)
		}
		n++
		get := func(name string) jfr.Value {
			v, ok := ev.Field(name)
			if !ok {
				t.Fatalf("no field %s", name)
			}
			return v
		}
		arg, str := get("n").Int(), get("s").String()
		r0, r1 := get("r0").Int(), get("r1").String()
		want0, want1 := arg+3, "abc"
		if arg%3 == 0 {
			want0, want1 = 2*arg, "abc!"
		}
		if str != "abc" || r0 != want0 || r1 != want1 {
			t.Fatalf("work(%d, %q) = %d, %q; want %d, %q", arg, str, r0, r1, want0, want1)
		}
		if ev.Duration() <= 0 {
			t.Fatalf("duration %v", ev.Duration())
		}
		th, _ := get("eventThread").Resolve().Field("javaThreadId")
		perG[th.Int()]++
		st := get("stackTrace").Resolve()
		frames, _ := st.Field("frames")
		if frames.Len() < 2 {
			t.Fatalf("stack of %d frames", frames.Len())
		}
		var names []string
		for _, fr := range frames.Elems() {
			m, _ := fr.Field("method")
			name, _ := m.Resolve().Field("name")
			names = append(names, name.Resolve().String())
		}
		if names[0] != "work" || names[1] != "main.func1" {
			t.Fatalf("stack %v, want work called by main.func1", names)
		}
		if line, _ := frames.Index(0).Field("lineNumber"); line.Int() < 17 || line.Int() > 25 {
			t.Fatalf("main.work's frame at line %d", line.Int())
		}
	}
	if n != 1000 || len(perG) != 2 {
		t.Errorf("%d events on goroutines %v, want 1000 on 2", n, perG)
	}
	for g, c := range sums[0].Goroutines {
		if perG[int64(g)] != int(c) {
			t.Errorf("goroutine %d: %d events, %d calls", g, perG[int64(g)], c)
		}
	}

	out := testrec.RunJFR(t, "print", "--json", "--events", "flightrec.probe.main.work", path)
	var doc struct {
		Recording struct {
			Events []struct {
				Values map[string]any `json:"values"`
			} `json:"events"`
		} `json:"recording"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Recording.Events) != 1000 {
		t.Fatalf("jfr printed %d events", len(doc.Recording.Events))
	}
	v := doc.Recording.Events[0].Values
	if v["s"] != "abc" || v["eventThread"] == nil {
		t.Errorf("jfr print --json: %v", v)
	}
	sum := string(testrec.RunJFR(t, "summary", path))
	if !strings.Contains(sum, "flightrec.probe.main.work") || !strings.Contains(sum, "1000") {
		t.Errorf("jfr summary:\n%s", sum)
	}
}
