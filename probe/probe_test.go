//go:build linux

package probe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightrec/flightrec/internal/gobin"
)

// targets builds probe/testdata/target once per variant.
var (
	targetMu    sync.Mutex
	targetBuilt = map[string]string{}
	targetDir   string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "probe-targets")
	if err != nil {
		panic(err)
	}
	targetDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildTarget builds the target program; variant is "" (default),
// "stripped" (-s -w), "pie", "arm64" or a toolchain such as "go1.22.12".
func buildTarget(t testing.TB, variant string) string {
	t.Helper()
	targetMu.Lock()
	defer targetMu.Unlock()
	if p, ok := targetBuilt[variant]; ok {
		return p
	}
	out := filepath.Join(targetDir, "target"+variant)
	args := []string{"build", "-o", out}
	env := os.Environ()
	switch {
	case variant == "stripped":
		args = append(args, "-ldflags=-s -w")
	case variant == "pie":
		args = append(args, "-buildmode=pie")
	case variant == "arm64":
		env = append(env, "GOARCH=arm64")
	case strings.HasPrefix(variant, "go1"):
		env = append(env, "GOTOOLCHAIN="+variant, "GOFLAGS=-mod=mod")
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = filepath.Join("testdata", "target")
	if strings.HasPrefix(variant, "go1") {
		// An older toolchain builds the program as its own module.
		mod := t.(*testing.T).TempDir()
		src, err := os.ReadFile(filepath.Join("testdata", "target", "main.go"))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(mod, "main.go"), src, 0o644)
		os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module target\n\ngo 1.21\n"), 0o644)
		cmd.Dir = mod
	}
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		if strings.HasPrefix(variant, "go1") {
			t.Skipf("toolchain %s not available: %v\n%s", variant, err, b)
		}
		t.Fatalf("building target: %v\n%s", err, b)
	}
	targetBuilt[variant] = out
	return out
}

// needProbes skips the test where uprobes cannot be placed.
func needProbes(t *testing.T) {
	t.Helper()
	if err := CheckPrivileges(); err != nil {
		t.Skipf("skipping: %v (run as root)", err)
	}
	if err := CheckUprobes(); err != nil {
		t.Skipf("skipping: %v", err)
	}
}

type target struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
	lines []string
}

// startTarget runs the target and waits until it is ready; it starts its
// workload at go().
func startTarget(t *testing.T, bin string, args ...string) *target {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tg := &target{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if !tg.out.Scan() || tg.out.Text() != "ready" {
		t.Fatalf("target did not start: %q", tg.out.Text())
	}
	return tg
}

func (tg *target) goRun() { fmt.Fprintln(tg.stdin) }

// finish reads the rest of the target's output and waits for it.
func (tg *target) finish(t *testing.T) []string {
	t.Helper()
	for tg.out.Scan() {
		tg.lines = append(tg.lines, tg.out.Text())
	}
	if err := tg.cmd.Wait(); err != nil {
		t.Fatalf("target failed: %v (output %q)", err, tg.lines)
	}
	return tg.lines
}

// probeRun attaches to tg, starts its workload and collects calls until
// it exits.
func probeRun(t *testing.T, tg *target, opts Options) ([]Summary, []*Call, *Session) {
	t.Helper()
	s, err := Attach(tg.cmd.Process.Pid, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var calls []*Call
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() { done <- s.Run(ctx, func(c *Call) { calls = append(calls, c) }) }()
	tg.goRun()
	tg.finish(t)
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	sums, err := s.Summaries()
	if err != nil {
		t.Fatal(err)
	}
	return sums, calls, s
}

var goroutineLine = regexp.MustCompile(`^goroutine (\d+) calls (\d+)$`)

// targetCounts parses the target's "goroutine G calls N" lines.
func targetCounts(t *testing.T, lines []string) map[uint64]uint64 {
	m := map[uint64]uint64{}
	for _, l := range lines {
		if g := goroutineLine.FindStringSubmatch(l); g != nil {
			id, _ := strconv.ParseUint(g[1], 10, 64)
			n, _ := strconv.ParseUint(g[2], 10, 64)
			m[id] += n
		}
	}
	return m
}

func equalCounts(a, b map[uint64]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestListFunctions(t *testing.T) {
	for _, v := range []string{"", "stripped", "pie"} {
		bin, err := gobin.Open(buildTarget(t, v))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range bin.Match("main.*") {
			names = append(names, f.Name)
		}
		bin.Close()
		got := strings.Join(names, " ")
		for _, want := range []string{"main.work", "main.grow", "main.tiny", "main.loop", "main.main"} {
			if !strings.Contains(got, want) {
				t.Errorf("%q build: main.* lists %q, missing %s", v, got, want)
			}
		}
		if strings.Contains(got, "main.double") {
			t.Errorf("%q build: lists the inlined main.double", v)
		}
	}
}

// TestCountsPerGoroutine checks call and entry counts per goroutine
// against the target's own, for each kind of build.
func TestCountsPerGoroutine(t *testing.T) {
	needProbes(t)
	for _, v := range []string{"", "stripped", "pie", "go1.22.12"} {
		t.Run("build="+v, func(t *testing.T) {
			bin := buildTarget(t, v)
			tg := startTarget(t, bin, "work", "4", "20000")
			sums, _, _ := probeRun(t, tg, Options{Funcs: []string{"main.work", "main.wo*:entry"}})
			want := targetCounts(t, tg.lines)
			if len(want) != 4 {
				t.Fatalf("target printed %q", tg.lines)
			}
			if len(sums) != 1 {
				t.Fatalf("%d probes, want 1 (the glob repeats main.work)", len(sums))
			}
			s := sums[0]
			if s.Calls != 80000 || !equalCounts(s.Goroutines, want) {
				t.Errorf("probe counted %d calls %v, target made 80000 %v", s.Calls, s.Goroutines, want)
			}
			if s.Durations.N != s.Calls || s.Dropped != 0 || s.Lost != 0 {
				t.Errorf("%d durations for %d calls, %d dropped, %d lost", s.Durations.N, s.Calls, s.Dropped, s.Lost)
			}
		})
	}
}

// TestCountsReusedG runs goroutines one after another, each getting the g
// its predecessor freed: the goroutine id cache must forget a g when the
// runtime frees it (gdestroy, or goexit0 in Go 1.21), or later goroutines
// would be counted under the first one's id.
func TestCountsReusedG(t *testing.T) {
	needProbes(t)
	for _, v := range []string{"", "go1.21.13"} {
		t.Run("build="+v, func(t *testing.T) {
			tg := startTarget(t, buildTarget(t, v), "churn", "300", "7")
			sums, _, s := probeRun(t, tg, Options{Funcs: []string{"main.work:entry"}})
			if !s.bpf.CacheGoids {
				t.Error("the goroutine id cache is off")
			}
			want := targetCounts(t, tg.lines)
			if len(want) != 300 {
				t.Fatalf("target printed %d goroutines", len(want))
			}
			if !equalCounts(sums[0].Goroutines, want) {
				t.Errorf("probe counted %d calls in %d goroutines, target made them in %d", sums[0].Calls, len(sums[0].Goroutines), len(want))
			}
		})
	}
}

// TestArm64Refused: an arm64 executable's functions are listed, but
// probing it fails with a clear error before anything is placed.
func TestArm64Refused(t *testing.T) {
	bin, err := gobin.Open(buildTarget(t, "arm64"))
	if err != nil {
		t.Fatal(err)
	}
	defer bin.Close()
	if fns := bin.Match("main.work"); len(fns) != 1 {
		t.Fatalf("main.work: %d functions", len(fns))
	}
	_, err = attach(1, bin.Path, bin, Options{Funcs: []string{"main.work"}})
	if err == nil || !strings.Contains(err.Error(), "probing arm64 executables is not supported (only amd64)") {
		t.Errorf("attach: %v", err)
	}
}

// TestGlobs probes every linked function of two packages of the standard
// library at once.
func TestGlobs(t *testing.T) {
	needProbes(t)
	tg := startTarget(t, buildTarget(t, ""), "work", "2", "10")
	sums, _, s := probeRun(t, tg, Options{Funcs: []string{"strconv.*", "fmt.*"}})
	if len(sums) < 20 {
		t.Fatalf("%d probes", len(sums))
	}
	calls := map[string]uint64{}
	for _, sum := range sums {
		calls[sum.Func] = sum.Calls
	}
	// Atoi parses two arguments and each goroutine's id; Fprintf prints
	// two goroutine lines and the total.
	if calls["strconv.Atoi"] != 4 || calls["fmt.Fprintf"] != 3 {
		t.Errorf("strconv.Atoi %d calls, fmt.Fprintf %d (of %d probes, %d uprobes)", calls["strconv.Atoi"], calls["fmt.Fprintf"], len(sums), s.Uprobes)
	}
}

// TestSingleUprobes runs a call probe through perf-event uprobes, as on
// kernels without uprobe_multi links (before 6.6).
func TestSingleUprobes(t *testing.T) {
	needProbes(t)
	singleUprobes = true
	defer func() { singleUprobes = false }()
	tg := startTarget(t, buildTarget(t, ""), "work", "2", "5000")
	sums, _, _ := probeRun(t, tg, Options{Funcs: []string{"main.work"}})
	if want := targetCounts(t, tg.lines); sums[0].Calls != 10000 || !equalCounts(sums[0].Goroutines, want) || sums[0].Durations.N != 10000 {
		t.Errorf("counted %v (%d paired), target %v", sums[0].Goroutines, sums[0].Durations.N, want)
	}
}

func TestEntryOnlyCounts(t *testing.T) {
	needProbes(t)
	tg := startTarget(t, buildTarget(t, ""), "work", "3", "10000")
	sums, calls, _ := probeRun(t, tg, Options{Funcs: []string{"main.work:entry"}})
	want := targetCounts(t, tg.lines)
	if sums[0].Kind != "entry" || sums[0].Calls != 30000 || !equalCounts(sums[0].Goroutines, want) {
		t.Errorf("entry probe: %+v, target %v", sums[0], want)
	}
	if len(calls) != 0 || sums[0].Durations != nil {
		t.Errorf("an entry-only counting probe sent %d records", len(calls))
	}
}

// TestArgsAndResults checks arguments at entry and results at both
// return paths of main.work(n int, s string) (int, string).
func TestArgsAndResults(t *testing.T) {
	needProbes(t)
	tg := startTarget(t, buildTarget(t, ""), "work", "1", "3000")
	sums, calls, _ := probeRun(t, tg, Options{Funcs: []string{"main.work"}, Args: true, Records: true})
	if uint64(len(calls)) != sums[0].Calls || len(calls) != 3000 {
		t.Fatalf("%d records, %d calls", len(calls), sums[0].Calls)
	}
	seen := map[int64]bool{}
	paths := map[bool]int{}
	for _, c := range calls {
		if len(c.Args) != 2 || len(c.Results) != 2 {
			t.Fatalf("args %v results %v", c.Args, c.Results)
		}
		n, s := c.Args[0], c.Args[1]
		if n.Param.Name != "n" || s.Param.Name != "s" || s.Str != "abc" {
			t.Fatalf("args %s=%v %s=%q", n.Param.Name, n.Int, s.Param.Name, s.Str)
		}
		r0, r1 := c.Results[0], c.Results[1]
		wantR0, wantR1 := n.Int+3, "abc"
		if n.Int%3 == 0 {
			wantR0, wantR1 = n.Int*2, "abc!"
		}
		if r0.Int != wantR0 || r1.Str != wantR1 || r0.Param.Name != "~r0" || r1.Param.Name != "~r1" {
			t.Fatalf("work(%d) returned %s=%d %s=%q, want %d %q", n.Int, r0.Param.Name, r0.Int, r1.Param.Name, r1.Str, wantR0, wantR1)
		}
		seen[n.Int] = true
		paths[n.Int%3 == 0]++
		if c.Duration() <= 0 {
			t.Fatalf("duration %v", c.Duration())
		}
	}
	if len(seen) != 3000 || paths[true] != 1000 || paths[false] != 2000 {
		t.Errorf("saw %d distinct n, paths %v", len(seen), paths)
	}
}

// TestRecursionThroughStackGrowth probes a recursive function whose
// frames force stack copies, in hundreds of goroutines: every call pairs
// with its own return and the target is unharmed.
func TestRecursionThroughStackGrowth(t *testing.T) {
	needProbes(t)
	tg := startTarget(t, buildTarget(t, ""), "grow", "300", "100")
	sums, calls, _ := probeRun(t, tg, Options{Funcs: []string{"main.grow"}, Args: true, Records: true})
	if got := strings.Join(tg.lines, "\n"); got != "calls 30300 ok true" {
		t.Fatalf("target printed %q", got)
	}
	s := sums[0]
	if s.Calls != 30300 || len(s.Goroutines) != 300 || s.Durations.N != 30300 || s.Dropped != 0 || s.Lost != 0 {
		t.Fatalf("calls %d goroutines %d paired %d dropped %d lost %d", s.Calls, len(s.Goroutines), s.Durations.N, s.Dropped, s.Lost)
	}
	for g, n := range s.Goroutines {
		if n != 101 {
			t.Errorf("goroutine %d: %d calls, want 101", g, n)
		}
	}
	// Each activation's result is the sum 0..depth: pairing by stack
	// position gave each return its own entry.
	for _, c := range calls {
		d := c.Args[0].Int
		if c.Results[0].Int != d*(d+1)/2 {
			t.Fatalf("grow(%d) paired with result %d", d, c.Results[0].Int)
		}
	}
}

func TestSample(t *testing.T) {
	needProbes(t)
	tg := startTarget(t, buildTarget(t, ""), "work", "2", "20000")
	sums, calls, _ := probeRun(t, tg, Options{Funcs: []string{"main.work"}, Records: true, Sample: 10})
	if sums[0].Calls != 40000 {
		t.Errorf("sampling changed the count: %d", sums[0].Calls)
	}
	// 4000 expected; 5 standard deviations is about 300.
	if len(calls) < 3600 || len(calls) > 4400 || sums[0].Durations.N != uint64(len(calls)) {
		t.Errorf("%d of 40000 calls recorded with --sample 10", len(calls))
	}
}

// TestDetachUnderLoad detaches while the target calls the probed function
// as fast as it can; the target must go on computing correctly.
func TestDetachUnderLoad(t *testing.T) {
	needProbes(t)
	tg := startTarget(t, buildTarget(t, ""), "spin")
	s, err := Attach(tg.cmd.Process.Pid, Options{Funcs: []string{"main.tiny", "main.loop:entry"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tg.goRun()
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	if err := s.Run(ctx, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run: %v", err)
	}
	sums, err := s.Summaries()
	if err != nil {
		t.Fatal(err)
	}
	// Links close in the order they were placed, so loop's probe outlives
	// tiny's: every tiny call counted is inside a loop call counted (or one
	// already running at attach).
	if sums[0].Calls == 0 || sums[1].Calls == 0 || sums[0].Calls > 1000*(sums[1].Calls+1) {
		t.Errorf("tiny %d calls, loop %d: want at most 1000 per loop", sums[0].Calls, sums[1].Calls)
	}
	time.Sleep(200 * time.Millisecond) // the target runs unprobed
	tg.goRun()
	lines := tg.finish(t)
	if len(lines) != 1 || !strings.HasSuffix(lines[0], "ok true") {
		t.Errorf("target after detach: %q", lines)
	}
}

// TestProcessAlive checks the /proc fallback that tells when a target
// ends on kernels without pidfd_open: a zombie counts as ended.
func TestProcessAlive(t *testing.T) {
	if !processAlive(os.Getpid()) {
		t.Error("this process is not alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	deadline := time.Now().Add(10 * time.Second)
	for processAlive(pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // exits and stays a zombie until Wait
	}
	if processAlive(pid) {
		t.Error("an exited child (a zombie) is alive")
	}
	cmd.Wait()
	if processAlive(pid) {
		t.Error("a reaped child is alive")
	}
}

// TestCompositeArgs checks register words of a struct, a slice and an
// interface, a bool, a float (not capturable) and the results.
func TestCompositeArgs(t *testing.T) {
	needProbes(t)
	tg := startTarget(t, buildTarget(t, ""), "shapes", "40")
	_, calls, _ := probeRun(t, tg, Options{Funcs: []string{"main.shapes"}, Args: true, Records: true})
	if len(calls) != 40 {
		t.Fatalf("%d calls", len(calls))
	}
	seen := map[int64]bool{}
	for _, c := range calls {
		if len(c.Args) != 5 || len(c.Results) != 2 {
			t.Fatalf("%d args, %d results", len(c.Args), len(c.Results))
		}
		p, xs, e, ok, f := c.Args[0], c.Args[1], c.Args[2], c.Args[3], c.Args[4]
		i := int64(int32(p.Words[0]))
		seen[i] = true
		if p.Param.Kind() != "words" || len(p.Words) != 2 || int32(p.Words[1]) != -2 {
			t.Fatalf("p = %v", p)
		}
		if len(xs.Words) != 3 || xs.Words[0] == 0 || xs.Words[1] != uint64(i%4) || xs.Words[2] != 10 {
			t.Fatalf("xs = %v (i=%d)", xs, i)
		}
		if len(e.Words) != 2 || e.Words[0] != 0 || e.Words[1] != 0 {
			t.Fatalf("e = %v", e)
		}
		if ok.Param.Kind() != "bool" || ok.Bool != (i%2 == 0) {
			t.Fatalf("ok = %v (i=%d)", ok, i)
		}
		if f.Missing == "" || f.String() != "<unavailable: float registers are not readable from eBPF>" ||
			f.JSON() != "unavailable: float registers are not readable from eBPF" {
			t.Fatalf("float argument: %+v renders as %s and %v", f, f, f.JSON())
		}
		r0, r1 := c.Results[0], c.Results[1]
		want := i - 2 + i%4
		if i%2 != 0 {
			want = -1
		}
		if r0.Int != want || r1.Bool != (i%2 == 0) {
			t.Fatalf("shapes(i=%d) = %d, %v; want %d", i, r0.Int, r1.Bool, want)
		}
		if got := p.String(); got != fmt.Sprintf("{X: %#x, Y: 0xfffffffe}", i) {
			t.Fatalf("p renders as %s", got)
		}
	}
	if len(seen) != 40 {
		t.Errorf("%d distinct calls", len(seen))
	}
}

// TestOnlyThatProcess runs two processes of the same executable: only the
// probed one's calls count.
func TestOnlyThatProcess(t *testing.T) {
	needProbes(t)
	bin := buildTarget(t, "")
	other := startTarget(t, bin, "work", "1", "7000")
	tg := startTarget(t, bin, "work", "1", "3000")
	s, err := Attach(tg.cmd.Process.Pid, Options{Funcs: []string{"main.work"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() { done <- s.Run(t.Context(), nil) }()
	other.goRun()
	tg.goRun()
	other.finish(t)
	tg.finish(t)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	sums, err := s.Summaries()
	if err != nil {
		t.Fatal(err)
	}
	if sums[0].Calls != 3000 || sums[0].Durations.N != 3000 {
		t.Errorf("%d calls (%d paired) counted; the probed process made 3000, the other 7000", sums[0].Calls, sums[0].Durations.N)
	}
}

// TestNoUprobes pretends the kernel has no uprobe PMU: Attach fails with
// ErrNoUprobes before touching the target.
func TestNoUprobes(t *testing.T) {
	if err := CheckPrivileges(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	defer func(p string) { uprobePMU = p }(uprobePMU)
	uprobePMU = "/nonexistent/uprobe"
	tg := startTarget(t, buildTarget(t, ""), "work", "1", "10")
	_, err := Attach(tg.cmd.Process.Pid, Options{Funcs: []string{"main.work"}})
	if !errors.Is(err, ErrNoUprobes) || !strings.Contains(err.Error(), "no uprobe support") {
		t.Fatalf("Attach: %v", err)
	}
	tg.goRun()
	if lines := tg.finish(t); len(lines) != 2 {
		t.Errorf("target: %q", lines)
	}
}
