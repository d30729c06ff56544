package jdkio

import (
	"os/exec"
	"regexp"
	"testing"
)

// TestEnabledInlined: each wrapped Read, ReadAt, Write, WriteAt and Sync
// tests its type's flag inline, so that with no recording it costs one
// load and one branch more than the call it wraps (BenchmarkConnWrite).
func TestEnabledInlined(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the package")
	}
	out, err := exec.Command("go", "build", "-gcflags=-m", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	re := regexp.MustCompile(`(?m)^\S*(conn|file)\.go:\d+:\d+: inlining call to event\.\(\*Type\[.*\]\)\.Enabled$`)
	if n := len(re.FindAll(out, -1)); n != 7 {
		t.Errorf("Enabled inlined in %d wrapper methods, want 7 (Conn.Read, Conn.Write, File.Read, ReadAt, Write, WriteAt, Sync):\n%s", n, out)
	}
}
