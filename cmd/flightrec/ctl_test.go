package main

import (
	"bufio"
	"bytes"
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
	"syscall"
	"testing"
	"time"

	"github.com/flightrec/flightrec/internal/jfrtool"
	"github.com/flightrec/flightrec/internal/testrec"
	"github.com/flightrec/flightrec/jfr"
)

// buildService builds testdata/ctlservice into dir.
func buildService(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "ctlservice")
	out, err := exec.Command("go", "build", "-o", bin, "./testdata/ctlservice").CombinedOutput()
	if err != nil {
		t.Fatalf("building the test service: %v\n%s", err, out)
	}
	return bin
}

// service is a running testdata/ctlservice.
type service struct {
	cmd   *exec.Cmd
	pid   int
	stdin io.WriteCloser
	out   *bytes.Buffer
}

// startService starts the test service with the extra environment and
// waits until it serves.
func startService(t *testing.T, dir string, env ...string) *service {
	t.Helper()
	bin := buildService(t, dir)
	cmd := exec.Command(bin)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &service{cmd: cmd, pid: cmd.Process.Pid, stdin: stdin, out: &errBuf}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("service did not start: %q %v\n%s", line, err, errBuf.String())
	}
	return s
}

// ctl runs flightrec ctl in this process and fails the test on an error.
func ctl(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := runCmd(t, append([]string{"ctl"}, args...)...)
	if code != 0 {
		t.Fatalf("flightrec ctl %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return string(out)
}

// ticks reads the app.Tick events of a recording: their sequence numbers
// and end times.
func ticks(t *testing.T, path string) (seqs []int64, ends []time.Time, durs []time.Duration) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := jfr.NewBytesReader(data, nil)
	var ev jfr.Event
	for {
		err := r.ReadEvent(&ev)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if ev.Type.Name != "app.Tick" {
			continue
		}
		seq, _ := ev.Field("seq")
		seqs = append(seqs, seq.Int())
		ends = append(ends, ev.StartTime().Add(ev.Duration()))
		durs = append(durs, ev.Duration())
	}
	return seqs, ends, durs
}

// chunkSpans returns the start and end (ns since the epoch) of every chunk
// of a recording.
func chunkSpans(t *testing.T, path string) [][2]int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := jfr.NewBytesReader(data, nil)
	var spans [][2]int64
	for {
		c, err := r.NextChunk()
		if errors.Is(err, io.EOF) {
			return spans
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		spans = append(spans, [2]int64{c.Header.StartNanos, c.Header.StartNanos + c.Header.DurationNanos})
	}
}

func latest(ts []time.Time) time.Time {
	var m time.Time
	for _, t := range ts {
		if t.After(m) {
			m = t
		}
	}
	return m
}

// jfrSummary checks that the jfr tool reads the file, when it is installed.
func jfrSummary(t *testing.T, path string) {
	t.Helper()
	if _, err := exec.LookPath("jfr"); err != nil {
		return
	}
	testrec.RunJFR(t, "summary", path)
}

func TestCtlCommands(t *testing.T) {
	dir := t.TempDir()
	s := startService(t, dir, "FLIGHTREC_START=name=boot,maxage=6s")
	pid := strconv.Itoa(s.pid)

	list := ctl(t)
	if !regexp.MustCompile(`(?m)^` + pid + `\s+ctlservice\s+go1\.\S+\s+1$`).MatchString(list) {
		t.Errorf("ctl lists:\n%s", list)
	}
	if out := ctl(t, pid, "check"); !strings.Contains(out, "Recording 1: name=boot destination=\"memory\"") || !strings.Contains(out, "maxage=6s (running)") {
		t.Errorf("check:\n%s", out)
	}

	// A ring of 6 s is cut into chunks of 1.5 s: after 4 s some end over
	// a second ago.
	dump, whole := filepath.Join(dir, "boot.jfr"), filepath.Join(dir, "boot-whole.jfr")
	time.Sleep(4 * time.Second)
	ctl(t, pid, "dump", "--name", "boot", "--filename", whole)
	before := time.Now()
	if out := ctl(t, pid, "dump", "--name", "boot", "--filename", dump, "--begin", "-1s"); !strings.Contains(out, "Dumped recording \"boot\"") {
		t.Errorf("dump:\n%s", out)
	}
	after := time.Now()
	jfrSummary(t, dump)
	if _, ends, _ := ticks(t, dump); len(ends) == 0 {
		t.Error("dump of boot has no app.Tick")
	}
	// --begin selects whole chunks, as the JDK's does: those ending after
	// the service's now-1s, which lies between before-1s and after-1s.
	got := map[int64]bool{}
	for _, c := range chunkSpans(t, dump) {
		got[c[0]] = true
		if end := time.Unix(0, c[1]); end.Before(before.Add(-time.Second)) {
			t.Errorf("dump --begin -1s holds a chunk ending %v before the begin", before.Add(-time.Second).Sub(end))
		}
	}
	for _, c := range chunkSpans(t, whole) {
		if end := time.Unix(0, c[1]); end.After(after.Add(-time.Second)) && !got[c[0]] {
			t.Errorf("dump --begin -1s left out the chunk starting %v, ending %v", time.Unix(0, c[0]), end)
		}
	}
	code, _, errOut := runCmd(t, "ctl", pid, "dump", "--name", "boot", "--filename", filepath.Join(dir, "none.jfr"), "--end", "-1h")
	if code != 1 || !strings.Contains(string(errOut), "the recording holds no chunk in the time range") {
		t.Errorf("dump --end -1h: exit %d, %s", code, errOut)
	}
	stopped := filepath.Join(dir, "boot-stop.jfr")
	if out := ctl(t, pid, "stop", "--name", "1", "--filename", stopped); !strings.Contains(out, "written to "+stopped) {
		t.Errorf("stop --filename:\n%s", out)
	}
	jfrSummary(t, stopped)
	if out := ctl(t, pid, "check"); !strings.Contains(out, "No available recordings.") {
		t.Errorf("check after stop:\n%s", out)
	}

	// Alone (recordings share their chunks, and the lowest threshold of
	// those running wins), r1 shows its settings and their live changes.
	file := filepath.Join(dir, "r1.jfr")
	out := ctl(t, pid, "start", "--name", "r1", "--filename", file, "app.Tick#threshold=1ms")
	if !regexp.MustCompile(`Started recording \d+ "r1": ` + regexp.QuoteMeta(file)).MatchString(out) {
		t.Errorf("start:\n%s", out)
	}
	if out := ctl(t, pid, "check", "--name", "r1", "--verbose"); !strings.Contains(out, "app.Tick#threshold=1ms") {
		t.Errorf("check --verbose:\n%s", out)
	}
	time.Sleep(1500 * time.Millisecond)
	on := time.Now()
	ctl(t, pid, "configure", "--name", "r1", "app.Tick#enabled=false")
	time.Sleep(1500 * time.Millisecond)
	if out := ctl(t, pid, "stop", "--name", "r1"); !strings.Contains(out, "Stopped recording \"r1\"") {
		t.Errorf("stop:\n%s", out)
	}
	jfrSummary(t, file)
	seqs, ends, durs := ticks(t, file)
	if len(seqs) == 0 {
		t.Fatal("r1 recorded no app.Tick")
	}
	for i, d := range durs {
		// app.Tick sleeps 0, 0.5 or 1 ms: a threshold of 1 ms keeps only
		// the ones that slept 1 ms.
		if d < time.Millisecond {
			t.Fatalf("app.Tick %d lasted %v, under r1's threshold of 1ms", seqs[i], d)
		}
	}
	if last := latest(ends); last.After(on.Add(time.Second)) {
		t.Errorf("r1 recorded app.Tick ending %v after app.Tick#enabled=false", last.Sub(on))
	}

	// Mistakes get explanations.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{pid, "stop", "--name", "nope"}, `no recording named "nope": none is running`},
		{[]string{pid, "start", "app.Tick#color=red"}, `unknown setting "color"`},
		{[]string{pid, "dump", "--name", "x"}, "dump needs --name and --filename"},
		{[]string{pid, "check", "--events", "x"}, "check does not take --events"},
		{[]string{"1", "check"}, "agent.Listen(agent.Options{})"},
		{[]string{"999999999", "check"}, "no process with pid 999999999"},
	} {
		code, _, errOut := runCmd(t, append([]string{"ctl"}, c.args...)...)
		if code == 0 || !strings.Contains(string(errOut), c.want) {
			t.Errorf("ctl %v: exit %d, stderr %q, want %q", c.args, code, errOut, c.want)
		}
	}
}

func TestCtlStream(t *testing.T) {
	dir := t.TempDir()
	s := startService(t, dir)
	pid := strconv.Itoa(s.pid)
	outPath := filepath.Join(dir, "stream.out")
	outFile, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := time.Now()
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"ctl", pid, "stream", "--events", "Tick", "--json"}, outFile, os.Stderr)
	}()
	var first time.Duration
	for time.Since(started) < 10*time.Second && first == 0 {
		time.Sleep(20 * time.Millisecond)
		if data, _ := os.ReadFile(outPath); bytes.Contains(data, []byte(`{"type":"app.Tick","values":{`)) {
			first = time.Since(started)
		}
	}
	if first == 0 || first > 2*time.Second {
		t.Errorf("first streamed event after %v, want within 2 s", first)
	}
	if out := ctl(t, pid, "check"); !strings.Contains(out, "name=stream-") {
		t.Errorf("check while streaming shows no stream recording:\n%s", out)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("stream exit status %d after interrupt", code)
	}
	data, _ := os.ReadFile(outPath)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if !strings.HasPrefix(line, `{"type":"app.Tick"`) || !strings.HasSuffix(line, `"path":"\/tick"}}`) {
			t.Fatalf("streamed line %q", line)
		}
	}
	// The stream's recording goes with it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		out := ctl(t, pid, "check")
		if strings.Contains(out, "No available recordings.") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stream's recording is still there:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCtlOtherUserRefused runs ctl as nobody against a service of root's.
func TestCtlOtherUserRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root, to run the client as another user (setpriv)")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("needs setpriv (util-linux)")
	}
	dir := testrec.OpenTempDir(t)
	s := startService(t, dir)
	bin := filepath.Join(dir, "flightrec.test")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin, "ctl", strconv.Itoa(s.pid), "check")
	cmd.Env = append(os.Environ(), "FLIGHTREC_DEMO_NODE=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("ctl as nobody: %v\n%s", err, out)
	}
	want := fmt.Sprintf("permission denied: process %d belongs to uid 0 and only that user or root may control it", s.pid)
	if !strings.Contains(string(out), want) {
		t.Errorf("ctl as nobody says:\n%s\nwant %q", out, want)
	}
	// The service serves its owner still.
	ctl(t, strconv.Itoa(s.pid), "check")
}

// killedRecording kills the service with SIGKILL after it recorded for a
// while and returns when it did.
func killService(t *testing.T, s *service, after time.Duration) time.Time {
	t.Helper()
	time.Sleep(after)
	at := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.cmd.Wait()
	return at
}

func TestKill9FileRecording(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "app.jfr")
	s := startService(t, dir, "FLIGHTREC_START=name=f,filename="+file)
	killed := killService(t, s, 3*time.Second)
	if code, out, errOut := runCmd(t, "summary", file); code != 0 || !strings.Contains(string(out), "app.Tick") {
		t.Fatalf("summary of the killed recording: exit %d\n%s%s", code, out, errOut)
	}
	jfrSummary(t, file)
	_, ends, _ := ticks(t, file)
	if lost := killed.Sub(latest(ends)); lost > 1500*time.Millisecond {
		t.Errorf("the last app.Tick ends %v before the kill, want at most 1.5 s", lost)
	}
}

func TestKill9DiskRepository(t *testing.T) {
	dir := t.TempDir()
	repoBase := filepath.Join(dir, "repo")
	s := startService(t, dir, "FLIGHTREC_START=name=d,maxage=1m,disk=true", "FLIGHTREC_REPOSITORY="+repoBase)
	out := ctl(t, strconv.Itoa(s.pid), "check")
	m := regexp.MustCompile(`repository: (\S+)`).FindStringSubmatch(out)
	if m == nil || !strings.HasPrefix(m[1], repoBase) {
		t.Fatalf("check shows no repository under %s:\n%s", repoBase, out)
	}
	killed := killService(t, s, 3*time.Second)
	whole := filepath.Join(dir, "assembled.jfr")
	if code, out, errOut := runCmd(t, "assemble", m[1], whole); code != 0 {
		t.Fatalf("assemble: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCmd(t, "summary", whole); code != 0 || !strings.Contains(string(out), "app.Tick") {
		t.Fatalf("summary of the assembled recording: exit %d\n%s%s", code, out, errOut)
	}
	jfrSummary(t, whole)
	seqs, ends, _ := ticks(t, whole)
	if lost := killed.Sub(latest(ends)); lost > 1500*time.Millisecond {
		t.Errorf("the last app.Tick ends %v before the kill, want at most 1.5 s", lost)
	}
	seen := map[int64]bool{}
	for _, q := range seqs {
		if seen[q] {
			t.Fatalf("app.Tick %d twice: a chunk repeated", q)
		}
		seen[q] = true
	}
}

func TestDumpOnExit(t *testing.T) {
	t.Run("SIGTERM", func(t *testing.T) {
		dir := t.TempDir()
		file := filepath.Join(dir, "exit.jfr")
		s := startService(t, dir, "FLIGHTREC_START=name=x,maxage=1m,dumponexit=true,filename="+file)
		time.Sleep(1500 * time.Millisecond)
		sent := time.Now()
		s.cmd.Process.Signal(syscall.SIGTERM)
		err := s.cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
			t.Errorf("service ended with %v, want killed by SIGTERM", err)
		}
		jfrSummary(t, file)
		_, ends, _ := ticks(t, file)
		if len(ends) == 0 || sent.Sub(latest(ends)) > 200*time.Millisecond {
			t.Errorf("dump on SIGTERM: %d app.Tick, the last %v before the signal", len(ends), sent.Sub(latest(ends)))
		}
	})
	t.Run("normal exit", func(t *testing.T) {
		dir := t.TempDir()
		s := startService(t, dir, "CTLSERVICE_DUMPONEXIT=1", "FLIGHTREC_START=name=y,maxsize=10m")
		time.Sleep(1500 * time.Millisecond)
		s.stdin.Close() // the service calls agent.Close and returns
		if err := s.cmd.Wait(); err != nil {
			t.Fatalf("service: %v\n%s", err, s.out)
		}
		files, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("flightrec-%d-*-y.jfr", s.pid)))
		if len(files) != 1 {
			t.Fatalf("dump on exit wrote %v", files)
		}
		jfrSummary(t, files[0])
		if seqs, _, _ := ticks(t, files[0]); len(seqs) == 0 {
			t.Error("dump on exit has no app.Tick")
		}
		if _, err := os.Stat(fmt.Sprintf("%s/flightrec-%d/%d.sock", os.TempDir(), os.Getuid(), s.pid)); !os.IsNotExist(err) {
			t.Errorf("socket left after exit: %v", err)
		}
	})
}

// TestPrintFollow prints a file recording while the service writes it:
// events appear as chunks reach the file, each once, and print ends by
// itself after the recording stops.
func TestPrintFollow(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "live.jfr")
	s := startService(t, dir, "FLIGHTREC_START=name=live,filename="+file)
	outPath := filepath.Join(dir, "follow.out")
	outFile, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"print", "--follow", "--json", "--events", "app.Tick", file}, outFile, os.Stderr)
	}()
	seqRE := regexp.MustCompile(`"seq":(\d+)`)
	count := func() int {
		data, _ := os.ReadFile(outPath)
		return len(seqRE.FindAll(data, -1))
	}
	deadline := time.Now().Add(5 * time.Second)
	for count() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("print --follow printed no app.Tick within 5 s of the recording's start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	first := count()
	time.Sleep(2 * time.Second)
	if more := count(); more <= first {
		t.Errorf("print --follow printed %d events, then %d 2 s later", first, more)
	}
	ctl(t, strconv.Itoa(s.pid), "stop", "--name", "live")
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("print --follow: exit %d", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("print --follow did not end after the recording stopped")
	}
	data, _ := os.ReadFile(outPath)
	printed := map[string]bool{}
	for _, m := range seqRE.FindAllSubmatch(data, -1) {
		if printed[string(m[1])] {
			t.Fatalf("app.Tick %s printed twice", m[1])
		}
		printed[string(m[1])] = true
	}
	seqs, _, _ := ticks(t, file)
	if len(seqs) != len(printed) {
		t.Errorf("print --follow printed %d app.Tick, the file holds %d", len(printed), len(seqs))
	}
}

// BenchmarkCtlCheck runs `flightrec ctl PID check` as a user does, a new
// process each time, against the test service.
func BenchmarkCtlCheck(b *testing.B) {
	dir := b.TempDir()
	bin := filepath.Join(dir, "ctlservice")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/ctlservice").CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	svc := exec.Command(bin)
	svc.Env = append(os.Environ(), "FLIGHTREC_START=name=bench,maxage=1m")
	stdin, _ := svc.StdinPipe()
	stdout, _ := svc.StdoutPipe()
	if err := svc.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); svc.Wait() }()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		b.Fatalf("service: %q %v", line, err)
	}
	pid := strconv.Itoa(svc.Process.Pid)
	b.ResetTimer()
	for range b.N {
		cmd := exec.Command(os.Args[0], "ctl", pid, "check")
		cmd.Env = append(os.Environ(), "FLIGHTREC_DEMO_NODE=1")
		if out, err := cmd.CombinedOutput(); err != nil || !bytes.Contains(out, []byte("name=bench")) {
			b.Fatalf("%v\n%s", err, out)
		}
	}
}

// TestCtlStreamKeepsChunks streams from a service that writes a file
// recording of its own: the stream gets the service's flush segments, so
// while it runs the recording's chunks are not cut every second (the
// stream's start and stop cut one each), and the events it prints are
// those print shows of the file, values included.
func TestCtlStreamKeepsChunks(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "own.jfr")
	s := startService(t, dir, "CTLSERVICE_OWN="+own)
	pid := strconv.Itoa(s.pid)
	outPath := filepath.Join(dir, "stream.out")
	outFile, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := time.Now()
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"ctl", pid, "stream", "--events", "Tick", "--json"}, outFile, os.Stderr)
	}()
	var first time.Duration
	for time.Since(started) < 10*time.Second && first == 0 {
		time.Sleep(20 * time.Millisecond)
		if data, _ := os.ReadFile(outPath); bytes.Contains(data, []byte(`{"type":"app.Tick","values":{`)) {
			first = time.Since(started)
		}
	}
	if first == 0 || first > 2*time.Second {
		t.Errorf("first streamed event after %v, want within 2 s", first)
	}
	time.Sleep(time.Until(started.Add(4500 * time.Millisecond)))
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("stream exit status %d after interrupt", code)
	}
	// The stream's recording is gone once "own" is the only one left.
	for deadline := time.Now().Add(5 * time.Second); strings.Count(ctl(t, pid, "check"), "Recording ") > 1; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stream's recording is still there")
		}
	}
	time.Sleep(1500 * time.Millisecond) // a flush of "own" after the stream's last events

	data, err := os.ReadFile(own)
	if err != nil {
		t.Fatal(err)
	}
	// Each chunk printed alone: a stream converts a chunk's times with its
	// own header, as the JDK's streams do (jfr print, with the first
	// chunk's, for all: a few nanoseconds apart).
	var printed bytes.Buffer
	r := jfr.NewBytesReader(data, nil)
	chunks := 0
	for {
		c, err := r.NextChunk()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", own, err)
		}
		chunks++
		one := data[c.Offset:min(c.Offset+c.Header.Size, int64(len(data)))]
		if err := jfrtool.Print(&printed, jfr.NewBytesReader(one, nil), jfrtool.FormatJSONLines, jfrtool.PrintOptions{Events: "app.Tick", StackDepth: 5}); err != nil {
			t.Fatal(err)
		}
	}
	// Before the stream, during it, after it: with the stream cutting a
	// chunk a second there were 6 or more.
	if chunks > 3 {
		t.Errorf("%s has %d chunks after a stream of 4.5 s, want at most 3", own, chunks)
	}
	inFile := map[string]bool{}
	for line := range strings.Lines(printed.String()) {
		inFile[line] = true
	}
	streamed, _ := os.ReadFile(outPath)
	lines := strings.SplitAfter(string(streamed), "\n")
	if len(lines) < 1000 {
		t.Fatalf("%d events streamed in 4.5 s, want over 1000", len(lines))
	}
	for _, line := range lines[:len(lines)-1] {
		if !inFile[line] {
			seq := line[strings.Index(line, `"seq":`):]
			seq = seq[:strings.IndexByte(seq, ',')+1]
			for l := range inFile {
				if strings.Contains(l, seq) {
					t.Logf("print shows %q", l)
				}
			}
			t.Fatalf("streamed event %q is not one print shows of %s", line, own)
		}
	}
}

// TestCtlBadPID: a negative number or zero where the pid goes is a usage
// error that says a pid is wanted; "-5" was taken for an undefined flag.
func TestCtlBadPID(t *testing.T) {
	for _, pid := range []string{"-5", "0", "check"} {
		code, _, errOut := runCmd(t, "ctl", pid, "check")
		want := "flightrec ctl: expected a process id (a positive number), got \"" + pid + "\"\nusage: flightrec ctl "
		if code != 2 || !strings.HasPrefix(string(errOut), want) {
			t.Errorf("ctl %s check: exit %d, stderr %q; want 2, %q...", pid, code, errOut, want)
		}
	}
}

// TestCtlFilenameError: a --filename the program cannot write is
// reported with the flag, and the process that tried.
func TestCtlFilenameError(t *testing.T) {
	s := startService(t, t.TempDir(), "FLIGHTREC_START=name=boot")
	pid := strconv.Itoa(s.pid)
	for _, args := range [][]string{
		{"dump", "--name", "boot", "--filename", "/dev/null/x"},
		{"start", "--name", "r2", "--filename", "/dev/null/x"},
	} {
		code, _, errOut := runCmd(t, append([]string{"ctl", pid}, args...)...)
		want := "flightrec ctl: --filename /dev/null/x: process " + pid + ": "
		if code != 1 || !strings.HasPrefix(string(errOut), want) || !strings.HasSuffix(string(errOut), "not a directory\n") {
			t.Errorf("ctl %q: exit %d, stderr %q; want 1, %q...not a directory", args, code, errOut, want)
		}
	}
}

// TestCtlListNone lists with no process accepting control: the header,
// and on stderr how a program opts in, not a bare header.
func TestCtlListNone(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	code, out, errOut := runCmd(t, "ctl")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if strings.TrimSpace(string(out)) != "PID  PROGRAM  GO  RECORDINGS" {
		t.Errorf("stdout %q, want the header only", out)
	}
	if !strings.Contains(string(errOut), "no process accepts control") || !strings.Contains(string(errOut), "agent.Listen(agent.Options{})") {
		t.Errorf("stderr %q does not say how a program opts in", errOut)
	}
}
