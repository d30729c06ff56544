//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flightrec/flightrec/probe"
)

var (
	probeTargetOnce sync.Once
	probeTargetPath string
	probeTargetErr  error
)

// probeTarget builds probe/testdata/target once, in a directory anyone may
// read (the privilege test runs as nobody).
func probeTarget(t *testing.T) string {
	t.Helper()
	probeTargetOnce.Do(func() {
		dir, err := os.MkdirTemp("", "flightrec-probe")
		if err != nil {
			probeTargetErr = err
			return
		}
		os.Chmod(dir, 0o755)
		probeTargetPath = filepath.Join(dir, "target")
		out, err := exec.Command("go", "build", "-o", probeTargetPath, "../../probe/testdata/target").CombinedOutput()
		if err != nil {
			probeTargetErr = fmt.Errorf("building the target: %v\n%s", err, out)
		}
	})
	if probeTargetErr != nil {
		t.Fatal(probeTargetErr)
	}
	return probeTargetPath
}

func needRootProbes(t *testing.T) {
	t.Helper()
	if err := probe.CheckPrivileges(); err != nil {
		t.Skipf("skipping: %v (run as root)", err)
	}
	if err := probe.CheckUprobes(); err != nil {
		t.Skipf("skipping: %v", err)
	}
}

type probeTarget1 struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

func startProbeTarget(t *testing.T, args ...string) *probeTarget1 {
	t.Helper()
	cmd := exec.Command(probeTarget(t), args...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	tg := &probeTarget1{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	if !tg.out.Scan() || tg.out.Text() != "ready" {
		t.Fatal("target did not start")
	}
	return tg
}

// rest releases the target's workload and returns what it printed.
func (tg *probeTarget1) rest(t *testing.T) string {
	fmt.Fprintln(tg.stdin)
	var lines []string
	for tg.out.Scan() {
		lines = append(lines, tg.out.Text())
	}
	if err := tg.cmd.Wait(); err != nil {
		t.Fatalf("target: %v", err)
	}
	return strings.Join(lines, "\n")
}

// probeAsync runs `flightrec probe args...` while the caller drives the
// target; wait returns its status and output.
func probeAsync(t *testing.T, args ...string) (attached func(), wait func() (int, []byte, []byte)) {
	t.Helper()
	dir := t.TempDir()
	stdout, _ := os.Create(filepath.Join(dir, "stdout"))
	stderr, _ := os.Create(filepath.Join(dir, "stderr"))
	done := make(chan int, 1)
	go func() { done <- run(context.Background(), append([]string{"probe"}, args...), stdout, stderr) }()
	attached = func() {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			e, _ := os.ReadFile(stderr.Name())
			if bytes.Contains(e, []byte("attached ")) {
				return
			}
			select {
			case code := <-done:
				done <- code
				t.Fatalf("probe exited %d: %s", code, e)
			default:
			}
		}
		t.Fatal("probe did not attach")
	}
	wait = func() (int, []byte, []byte) {
		code := <-done
		stdout.Close()
		stderr.Close()
		o, _ := os.ReadFile(stdout.Name())
		e, _ := os.ReadFile(stderr.Name())
		return code, o, e
	}
	return attached, wait
}

// TestProbeJSON checks the --json summary document's shape and counts.
func TestProbeJSON(t *testing.T) {
	needRootProbes(t)
	tg := startProbeTarget(t, "work", "2", "3000")
	pid := tg.cmd.Process.Pid
	attached, wait := probeAsync(t, "--json", "-p", fmt.Sprint(pid), "main.work", "main.tiny:entry")
	attached()
	out := tg.rest(t)
	code, stdout, stderr := wait()
	if code != 0 || string(stderr) != fmt.Sprintf("attached 2 probes to PID %d\n", pid) {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var doc struct {
		PID    int `json:"pid"`
		Probes []struct {
			Func       string            `json:"func"`
			Kind       string            `json:"kind"`
			Calls      uint64            `json:"calls"`
			Dropped    *uint64           `json:"dropped"`
			Goroutines map[string]uint64 `json:"goroutines"`
			Duration   *struct {
				Min, Mean, P50, P99, Max uint64
				Log2Hist                 [][3]uint64 `json:"log2_hist"`
			} `json:"duration_ns"`
		} `json:"probes"`
	}
	dec := json.NewDecoder(bytes.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if doc.PID != pid || len(doc.Probes) != 2 {
		t.Fatalf("%s", stdout)
	}
	work, tiny := doc.Probes[0], doc.Probes[1]
	if work.Func != "main.work" || work.Kind != "call" || work.Calls != 6000 || work.Dropped == nil || *work.Dropped != 0 || len(work.Goroutines) != 2 {
		t.Errorf("main.work: %+v (target: %s)", work, out)
	}
	d := work.Duration
	if d == nil || d.Min == 0 || d.Min > d.P50 || d.P50 > d.P99 || d.P99 > d.Max || d.Mean < d.Min || d.Mean > d.Max {
		t.Fatalf("duration_ns %+v", d)
	}
	var n uint64
	for _, b := range d.Log2Hist {
		if b[1] != 2*b[0] {
			t.Errorf("bucket %v is not a power of two", b)
		}
		n += b[2]
	}
	if n != 6000 {
		t.Errorf("histogram holds %d calls", n)
	}
	if tiny.Kind != "entry" || tiny.Calls != 0 || tiny.Duration != nil {
		t.Errorf("main.tiny: %+v", tiny)
	}
}

// TestProbeTraceJSON checks --trace --json lines, arguments and results,
// and a program started by probe itself.
func TestProbeTraceJSON(t *testing.T) {
	needRootProbes(t)
	attached, wait := probeAsync(t, "--trace", "--json", "--args", "main.work", "--", probeTarget(t), "work", "1", "30")
	attached()
	code, stdout, stderr := wait()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	// ready, 30 calls, the target's two lines, the summary (in any order
	// between the target's output and ours).
	calls := 0
	for _, l := range lines {
		if !strings.HasPrefix(l, `{"func":"main.work","goroutine":`) {
			continue
		}
		var c struct {
			Func       string
			Goroutine  uint64
			Time       string
			DurationNS int64 `json:"duration_ns"`
			Args       map[string]any
			Results    map[string]any
		}
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatal(err)
		}
		if _, err := time.Parse(time.RFC3339Nano, c.Time); err != nil {
			t.Errorf("time %q: %v", c.Time, err)
		}
		n := int64(c.Args["n"].(float64))
		want := n + 3
		if n%3 == 0 {
			want = 2 * n
		}
		if c.Func != "main.work" || c.Goroutine == 0 || c.DurationNS <= 0 || c.Args["s"] != "abc" || int64(c.Results["~r0"].(float64)) != want {
			t.Errorf("trace line %s", l)
		}
		calls++
	}
	if calls != 30 || !strings.Contains(string(stdout), `"calls":30`) {
		t.Errorf("%d trace lines:\n%s", calls, stdout)
	}
}

// TestProbeErrors checks that each error is one line on stderr with a
// non-zero exit, and that the target runs on unharmed.
func TestProbeErrors(t *testing.T) {
	tg := startProbeTarget(t, "work", "1", "10")
	pid := fmt.Sprint(tg.cmd.Process.Pid)
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-p", pid, "main.wrok"}, "PID " + pid + " (" + probeTarget(t) + "): unknown function main.wrok; did you mean main.work?"},
		{[]string{"-p", pid, "main.double"}, "function exists only inlined: main.double is inlined into main.loop"},
		{[]string{"-p", pid, "nosuch.*"}, "unknown function nosuch.*"},
		{[]string{"-p", "999999999", "main.work"}, "PID 999999999: no such process"},
		{[]string{"-p", fmt.Sprint(sleeper.Process.Pid), "main.main"}, "not a Go executable"},
		{[]string{"--list", "/bin/sh"}, "/bin/sh: not a Go executable"},
		{[]string{"-p", pid, "--where", "n % == 3", "main.work"}, `--where "n % == 3": at offset 4: unexpected "=="`},
	} {
		code, stdout, stderr := runCmd(t, append([]string{"probe"}, c.args...)...)
		e := string(stderr)
		if code == 0 || len(stdout) != 0 || strings.Count(e, "\n") != 1 || !strings.Contains(e, c.want) {
			t.Errorf("probe %v: exit %d, stdout %q, stderr %q; want one line with %q", c.args, code, stdout, e, c.want)
		}
	}
	if out := tg.rest(t); out != "goroutine 1 calls 10\ncalls 10 sum 0" && !strings.HasPrefix(out, "goroutine ") {
		t.Errorf("target after the errors: %q", out)
	}
}

// TestProbeUsage: flags out of range are usage errors, found before any
// process is looked at.
func TestProbeUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--duration", "-1s", "-p", "1", "main.work"},
		{"--interval", "-5ms", "main.work", "--", "/bin/true"},
		{"-p", "-5", "main.work"},
		{"--list", "-p", "-5"},
	} {
		if code, _, stderr := runCmd(t, append([]string{"probe"}, args...)...); code != 2 {
			t.Errorf("probe %q: exit %d, want 2 (%s)", args, code, stderr)
		}
	}
}

// TestProbeUnprivileged runs probe as nobody: it must say which
// capabilities are missing.
func TestProbeUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch to an unprivileged user")
	}
	tg := startProbeTarget(t, "work", "1", "10")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary runs main when FLIGHTREC_DEMO_NODE is set (TestMain);
	// nobody must be able to execute it and to read the target.
	dir, _ := os.MkdirTemp("", "flightrec-nobody")
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "flightrec")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	// Probe a target nobody owns, so that /proc/PID/exe is readable.
	own := exec.Command(probeTarget(t), "work", "1", "10")
	own.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	ownIn, _ := own.StdinPipe()
	if err := own.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { ownIn.Close(); own.Process.Kill(); own.Wait() }()
	time.Sleep(100 * time.Millisecond)
	cmd := exec.Command(bin, "probe", "-p", fmt.Sprint(own.Process.Pid), "main.work")
	cmd.Env = append(os.Environ(), "FLIGHTREC_DEMO_NODE=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	want := "flightrec probe: eBPF uprobes need root or CAP_BPF+CAP_PERFMON: missing CAP_BPF and CAP_PERFMON\n"
	if err == nil || stderr.String() != want {
		t.Errorf("as nobody: %v, stderr %q, want %q", err, stderr.String(), want)
	}
	tg.rest(t)
}

// TestProbeIntervalDuration prints the summary every --interval and stops
// at --duration, leaving the target running.
func TestProbeIntervalDuration(t *testing.T) {
	needRootProbes(t)
	tg := startProbeTarget(t, "spin")
	fmt.Fprintln(tg.stdin) // start spinning
	start := time.Now()
	code, stdout, stderr := runCmd(t, "probe", "--interval", "200ms", "--duration", "900ms", "-p", fmt.Sprint(tg.cmd.Process.Pid), "main.loop:entry")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if d := time.Since(start); d < 900*time.Millisecond || d > 20*time.Second {
		t.Errorf("ran %v with --duration 900ms", d)
	}
	if n := strings.Count(string(stdout), "main.loop (entry): "); n < 3 {
		t.Errorf("%d summaries with --interval 200ms over 900ms:\n%s", n, stdout)
	}
	if out := tg.rest(t); !strings.HasSuffix(out, "ok true") {
		t.Errorf("target after detach: %q", out)
	}
}
