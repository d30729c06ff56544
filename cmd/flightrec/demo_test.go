package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/jfr"
)

// TestDemoSettings checks that demo records with the preset --settings
// names: the CPU sampler and stack traces of every type are on with
// profile and off with default (jdk.ActiveSetting says so), and an unknown
// name is a usage error.
func TestDemoSettings(t *testing.T) {
	for preset, want := range map[string]string{"default": "false", "profile": "true"} {
		out := filepath.Join(t.TempDir(), "demo.jfr")
		code, stdout, stderr := runCmd(t, "demo", "--cluster=false", "--duration", "100ms", "--settings", preset, "--out", out)
		if code != 0 {
			t.Fatalf("--settings %s: exit %d\n%s\n%s", preset, code, stdout, stderr)
		}
		got := activeSettings(t, out)
		if s := got["jdk.ExecutionSample"]["enabled"]; s != want {
			t.Errorf("--settings %s: jdk.ExecutionSample enabled=%q, want %s", preset, s, want)
		}
		if s := got["demo.LockWait"]["stackTrace"]; s != want {
			t.Errorf("--settings %s: demo.LockWait stackTrace=%q, want %s", preset, s, want)
		}
	}
	code, _, stderr := runCmd(t, "demo", "--cluster=false", "--duration", "100ms", "--settings", "fast")
	if code != 2 || !strings.Contains(string(stderr), `--settings "fast": want default or profile`) {
		t.Errorf("--settings fast: exit %d, %s; want 2 and the error", code, stderr)
	}
}

// activeSettings returns the last jdk.ActiveSetting values of the file,
// by event type name and setting name.
func activeSettings(t *testing.T, path string) map[string]map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	r := jfr.NewBytesReader(data, nil)
	var ev jfr.Event
	for {
		err := r.ReadEvent(&ev)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type.Name != "jdk.ActiveSetting" {
			continue
		}
		id, _ := ev.Field("id")
		name, _ := ev.Field("name")
		val, _ := ev.Field("value")
		typ := ev.Chunk.Metadata.Class(id.Int())
		if typ == nil {
			t.Fatalf("jdk.ActiveSetting of undeclared type %d", id.Int())
		}
		if out[typ.Name] == nil {
			out[typ.Name] = map[string]string{}
		}
		out[typ.Name][name.String()] = val.String()
	}
}

// TestDemoUsage: a --duration or --requests out of range is a usage error,
// found before anything runs; they gave an empty recording, or a cluster
// that sent nothing and a merge that said its recordings were not ones.
func TestDemoUsage(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"--duration -1s", "--duration -1s: want a positive duration"},
		{"--duration 0s", "--duration 0s: want a positive duration"},
		{"--requests 0", "--requests 0: want at least 1"},
		{"--requests -3 --cluster=false", "--requests -3: want at least 1"},
	} {
		dir := t.TempDir()
		out := filepath.Join(dir, "demo.jfr")
		code, _, stderr := runCmd(t, append(append([]string{"demo"}, strings.Fields(c.args)...), "--out", out)...)
		if code != 2 || !strings.HasPrefix(string(stderr), "flightrec demo: "+c.want+"\n") {
			t.Errorf("demo %s: exit %d, %s; want 2 and %q", c.args, code, stderr, c.want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("demo %s: wrote %v", c.args, entries)
		}
	}
}
