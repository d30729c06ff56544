package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockWait blocks in sync.Mutex.Lock; the stack of the monitor events
// names it.
//
//go:noinline
func lockWait(mu *sync.Mutex) { mu.Lock() }

// writeTrace traces a workload with a mutex held for 30 ms while another
// goroutine waits for it, twice, and one runtime.GC, into a file.
func writeTrace(t *testing.T, path string) {
	t.Helper()
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skipf("the tracer is taken (go test -trace?): %v", err)
	}
	var mu sync.Mutex
	for range 2 {
		mu.Lock()
		done := make(chan struct{})
		go func() { lockWait(&mu); mu.Unlock(); close(done) }()
		time.Sleep(30 * time.Millisecond)
		mu.Unlock()
		<-done
	}
	runtime.GC()
	trace.Stop()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestImport converts a trace made in the test and reads the recording
// back with `flightrec print --json` and OpenJDK 17's jfr.
func TestImport(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "trace.out"), filepath.Join(dir, "trace.jfr")
	writeTrace(t, in)
	if code, stdout, stderr := runCmd(t, "import", in, out); code != 0 {
		t.Fatalf("import: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr := runCmd(t, "print", "--json", "--events", "JavaMonitorEnter,GarbageCollection", out)
	if code != 0 {
		t.Fatalf("print: exit %d\n%s", code, stderr)
	}
	var doc struct {
		Recording struct {
			Events []struct {
				Type   string `json:"type"`
				Values struct {
					Duration      string                     `json:"duration"`
					MonitorClass  struct{ Name string }      `json:"monitorClass"`
					PreviousOwner *struct{ JavaName string } `json:"previousOwner"`
					Address       json.Number                `json:"address"`
					Cause         string                     `json:"cause"`
					StackTrace    struct {
						Frames []struct {
							Method struct {
								Name string
							} `json:"method"`
						} `json:"frames"`
					} `json:"stackTrace"`
				} `json:"values"`
			} `json:"events"`
		} `json:"recording"`
	}
	if err := json.Unmarshal(stdout, &doc); err != nil {
		t.Fatalf("print --json: %v", err)
	}
	waits, gcs := 0, 0
	for _, e := range doc.Recording.Events {
		v := e.Values
		switch e.Type {
		case "jdk.JavaMonitorEnter":
			var names []string
			for _, f := range v.StackTrace.Frames {
				names = append(names, f.Method.Name)
			}
			if !strings.Contains(strings.Join(names, " "), "lockWait") {
				continue // a wait of the test framework's
			}
			waits++
			if v.MonitorClass.Name != "sync.Mutex" || v.PreviousOwner == nil || !strings.Contains(v.PreviousOwner.JavaName, "#") || v.Address != "0" {
				t.Errorf("monitor enter %+v", v)
			}
		case "jdk.GarbageCollection":
			if v.Cause == "System.gc()" {
				gcs++
			}
		}
	}
	if waits != 2 || gcs != 1 {
		t.Errorf("%d mutex waits in lockWait (want 2), %d System.gc() (want 1)", waits, gcs)
	}
	if _, err := exec.LookPath("jfr"); err == nil {
		jfrSummary(t, out)
	}

	// Bad input: one line naming the file, exit status 1, no output file.
	data, _ := os.ReadFile(in)
	cut := filepath.Join(dir, "cut.out")
	os.WriteFile(cut, data[:len(data)*3/4], 0o644)
	notTrace := filepath.Join(dir, "text.out")
	os.WriteFile(notTrace, []byte("not a trace\n"), 0o644)
	for file, want := range map[string]string{cut: "truncated trace", notTrace: "not a Go execution trace"} {
		bad := filepath.Join(dir, "bad.jfr")
		code, _, stderr := runCmd(t, "import", file, bad)
		if code != 1 || !bytes.HasPrefix(stderr, []byte("flightrec import: "+file+": ")) || !bytes.Contains(stderr, []byte(want)) {
			t.Errorf("import %s: exit %d, %q", file, code, stderr)
		}
		if _, err := os.Stat(bad); err == nil {
			t.Errorf("import %s wrote %s", file, bad)
		}
	}
}
