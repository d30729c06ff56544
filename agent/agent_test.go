package agent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/internal/ctlproto"
	"github.com/flightrec/flightrec/internal/testrec"
	"github.com/flightrec/flightrec/jfr"
	"github.com/flightrec/flightrec/recorder"
)

// TestMain makes the test binary a bare client when run so (as another
// user, by TestPeerRefused): it sends a check request to the socket and
// prints the reply.
func TestMain(m *testing.M) {
	if path := os.Getenv("AGENT_TEST_DIAL"); path != "" {
		conn, err := net.Dial("unix", path)
		if err != nil {
			fmt.Println("dial:", err)
			os.Exit(1)
		}
		ctlproto.WriteJSON(conn, ctlproto.Request{Version: ctlproto.Version, Command: ctlproto.CmdCheck})
		var resp ctlproto.Response
		if err := ctlproto.ReadJSON(conn, ctlproto.MaxFrame, &resp); err != nil {
			fmt.Println("read:", err)
			os.Exit(1)
		}
		fmt.Println("reply:", resp.Error)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func listen(t *testing.T) {
	t.Helper()
	if err := Listen(Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(Close)
}

func socket() string { return ctlproto.SocketPath(os.Geteuid(), os.Getpid()) }

// call makes one request on a fresh connection.
func call(t *testing.T, req ctlproto.Request) *ctlproto.Response {
	t.Helper()
	resp, conn, err := ctlproto.Call(os.Getpid(), req, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	return resp
}

// exchange writes raw bytes and returns the reply's error, or "closed".
func exchange(t *testing.T, raw []byte) string {
	t.Helper()
	conn, err := net.Dial("unix", socket())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	conn.Write(raw)
	conn.(*net.UnixConn).CloseWrite()
	var resp ctlproto.Response
	if err := ctlproto.ReadJSON(conn, ctlproto.MaxFrame, &resp); err != nil {
		if errors.Is(err, io.EOF) {
			return "closed"
		}
		return "read: " + err.Error()
	}
	return resp.Error
}

func frame(kind byte, n uint32, body string) []byte {
	b := []byte{kind, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], n)
	return append(b, body...)
}

func TestSocketFileModes(t *testing.T) {
	listen(t)
	st, err := os.Stat(socket())
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 || st.Mode()&os.ModeSocket == 0 {
		t.Errorf("socket mode %v, want a socket 0600", st.Mode())
	}
	dst, _ := os.Stat(filepath.Dir(socket()))
	if dst.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", dst.Mode())
	}
	if err := Listen(Options{}); err == nil {
		t.Error("a second Listen succeeded")
	}
	Close()
	if _, err := os.Stat(socket()); !os.IsNotExist(err) {
		t.Errorf("socket after Close: %v", err)
	}
}

// TestBadRequests sends garbage, oversized, truncated and malformed
// requests and floods of connections while a recording runs: each gets an
// error reply or a closed connection, and the agent and the recording go
// on.
func TestBadRequests(t *testing.T) {
	listen(t)
	rec, err := recorder.Start(recorder.WithName("victim"), recorder.WithRing(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(rand.IntN(256))
	}
	garbage[0] = 'x'
	for _, c := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"garbage", garbage, "bad request: unknown frame kind 0x78"},
		{"oversized", frame('J', 1<<30, "{"), "bad request: frame too large: 1073741824 bytes, the limit is 65536"},
		{"truncated", frame('J', 100, `{"version":1`), "bad request: truncated frame (12 of 100 bytes)"},
		{"truncated header", []byte{'J', 0}, "closed"},
		{"not JSON", frame('J', 5, "hello"), "bad request: invalid character 'h'"},
		{"segment frame", frame('S', 2, "{}"), "bad request: not a JSON frame"},
		{"old version", frame('J', 28, `{"version":0,"command":"x"}`+" "), "protocol version 0 not supported"},
		{"version 1", frame('J', 29, `{"version":1,"command":"rm"}`+" "), "protocol version 1 not supported (this agent speaks 2)"},
		{"unknown command", frame('J', 29, `{"version":2,"command":"rm"}`+" "), `unknown command "rm"`},
		{"empty", nil, "closed"},
	} {
		if got := exchange(t, c.raw); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}

	// A flood: more connections than are served at once, idle, sending
	// garbage or half requests.
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("unix", socket())
			if err != nil {
				return
			}
			defer conn.Close()
			switch i % 3 {
			case 0:
				conn.Write(garbage)
			case 1:
				conn.Write(frame('J', 1000, "{"))
			}
			conn.SetReadDeadline(time.Now().Add(4 * time.Second))
			io.Copy(io.Discard, conn)
		}()
	}
	wg.Wait()
	before := rec.Size()
	resp := call(t, ctlproto.Request{Command: ctlproto.CmdCheck, Name: "victim"})
	if len(resp.Recordings) != 1 || resp.Recordings[0].Name != "victim" {
		t.Fatalf("check after the flood: %+v", resp)
	}
	if after := rec.Size(); after <= before && before == 0 {
		t.Errorf("the recording holds %d bytes after the flood", after)
	}
}

// TestSlowClientClosed: a client that connects and sends nothing is
// dropped after the request time limit.
func TestSlowClientClosed(t *testing.T) {
	listen(t)
	conn, err := net.Dial("unix", socket())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := conn.Read(make([]byte, 1))
	if n != 0 || err != io.EOF {
		t.Fatalf("read %d, %v; want EOF", n, err)
	}
	if d := time.Since(start); d < requestTimeout-100*time.Millisecond || d > requestTimeout+2*time.Second {
		t.Errorf("closed after %v, want about %v", d, requestTimeout)
	}
}

// TestPeerRefused serves a socket anyone may reach and connects to it as
// nobody: the agent's uid check refuses with a clear error.
func TestPeerRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root, to connect as another user (setpriv)")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("needs setpriv (util-linux)")
	}
	dir := testrec.OpenTempDir(t)
	path := filepath.Join(dir, "open.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o666)
	a := &agent{ln: ln, sem: make(chan struct{}, maxConns), managed: map[int64]*managed{}, quit: make(chan struct{})}
	go a.serve()
	defer a.close()
	bin := filepath.Join(dir, "agent.test")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin)
	cmd.Env = append(os.Environ(), "AGENT_TEST_DIAL="+path)
	out, err := cmd.CombinedOutput()
	want := fmt.Sprintf("reply: permission denied: uid 65534 may not control process %d, which only uid 0 and root may control", os.Getpid())
	if err != nil || strings.TrimSpace(string(out)) != want {
		t.Errorf("as nobody: %v\n%s\nwant %s", err, out, want)
	}
}

func TestParseStartSpec(t *testing.T) {
	sp, err := parseStartSpec("name=app,filename=/tmp/a.jfr,settings=profile,duration=30s,maxsize=100m,maxage=2d,disk=true,dumponexit=true,app.X#threshold=5ms")
	if err != nil {
		t.Fatal(err)
	}
	want := startSpec{name: "app", filename: "/tmp/a.jfr", settings: "profile", duration: 30 * time.Second, maxSize: 100 << 20,
		maxAge: 48 * time.Hour, disk: true, dumpOnExit: true, options: []string{"app.X#threshold=5ms"}}
	if fmt.Sprint(sp) != fmt.Sprint(want) {
		t.Errorf("got %+v\nwant %+v", sp, want)
	}
	for _, bad := range []string{"name", "color=red", "maxsize=lots", "duration=-1s", "disk=maybe"} {
		if _, err := parseStartSpec(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestStartStopDuration starts a recording through the agent that stops
// by itself after its duration and writes its file.
func TestStartStopDuration(t *testing.T) {
	listen(t)
	file := filepath.Join(t.TempDir(), "d.jfr")
	resp := call(t, ctlproto.Request{Command: ctlproto.CmdStart, Name: "short", Duration: 1500 * time.Millisecond, MaxAge: time.Minute, Filename: file})
	if len(resp.Recordings) != 1 || resp.Recordings[0].Destination != "memory, then "+file {
		t.Fatalf("start: %+v", resp)
	}
	if _, _, err := ctlproto.Call(os.Getpid(), ctlproto.Request{Command: ctlproto.CmdStart, Name: "short"}, time.Second); err == nil ||
		!strings.Contains(err.Error(), `a recording named "short" is already running`) {
		t.Errorf("second start of the same name: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := recorder.Find("short"); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the recording did not stop after its duration")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st, err := os.Stat(file); err != nil || st.Size() == 0 {
		t.Errorf("file after the duration: %v", err)
	}
}

// BenchmarkCheck is a ctl check round trip: connect, request, the
// agent's reply with the recordings and their settings.
func BenchmarkCheck(b *testing.B) {
	if err := Listen(Options{}); err != nil {
		b.Fatal(err)
	}
	defer Close()
	rec, err := recorder.Start(recorder.WithName("bench"), recorder.WithRing(1<<20, 0))
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Stop()
	b.ResetTimer()
	for range b.N {
		resp, conn, err := ctlproto.Call(os.Getpid(), ctlproto.Request{Command: ctlproto.CmdCheck}, 5*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		conn.Close()
		if len(resp.Recordings) != 1 {
			b.Fatalf("%d recordings", len(resp.Recordings))
		}
	}
}

// TestStartSettingsFile starts a recording with a .jfc file and options,
// then reconfigures it with a preset: check shows the settings.
func TestStartSettingsFile(t *testing.T) {
	listen(t)
	jfc := filepath.Join(t.TempDir(), "my.jfc")
	os.WriteFile(jfc, []byte(`<configuration version="2.0"><event name="jdk.CPULoad"><setting name="period">2 s</setting></event></configuration>`), 0o644)
	resp := call(t, ctlproto.Request{Command: ctlproto.CmdStart, Name: "jfc", Settings: jfc, Options: []string{"jdk.GCHeapSummary#enabled=false"}})
	defer call(t, ctlproto.Request{Command: ctlproto.CmdStop, Name: "jfc"})
	got := strings.Join(resp.Recordings[0].Settings, " ")
	for _, want := range []string{"jdk.CPULoad#period=2s", "jdk.GCHeapSummary#enabled=false", "jdk.ExecutionSample#period=20ms"} {
		if !strings.Contains(got, want) {
			t.Errorf("settings %s lack %s", got, want)
		}
	}
	resp = call(t, ctlproto.Request{Command: ctlproto.CmdConfigure, Name: "jfc", Settings: "profile"})
	if got := strings.Join(resp.Recordings[0].Settings, " "); !strings.Contains(got, "jdk.ExecutionSample#period=10ms") || strings.Contains(got, "jdk.CPULoad#period=2s") {
		t.Errorf("after configure --settings profile: %s", got)
	}
	if _, _, err := ctlproto.Call(os.Getpid(), ctlproto.Request{Command: ctlproto.CmdStart, Name: "bad", Settings: "/nonexistent.jfc"}, time.Second); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("start with a missing .jfc: %v", err)
	}
}

type agentTick struct {
	event.Instant
	N int64
}

var (
	wantedType = event.Define[agentTick](event.Info{Name: "agenttest.Wanted"})
	otherType  = event.Define[agentTick](event.Info{Name: "agenttest.Other"})
)

// TestStreamSegments streams the process's own events: the segments
// carry the events of the types asked for and none of the others (which
// another recording has on), read as ctl's client reads them; when the
// client goes, the stream's recording goes too.
func TestStreamSegments(t *testing.T) {
	listen(t)
	rec, err := recorder.Start(recorder.WithName("all"), recorder.WithRing(0, 0),
		recorder.WithSettings(recorder.Settings{"agenttest.Other": {Enabled: recorder.Bool(true)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := int64(0); ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			for _, typ := range []*event.Type[agentTick]{wantedType, otherType} {
				ev := agentTick{N: n}
				typ.Begin(&ev)
				ev.Commit()
			}
			time.Sleep(time.Millisecond)
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	_, conn, err := ctlproto.Call(os.Getpid(), ctlproto.Request{Command: ctlproto.CmdStream, Events: []string{"Wanted"}}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	live := jfr.NewLiveChunk(&jfr.ReaderOptions{PerChunkClock: true})
	var chunk uint64
	var buf []byte
	var seg ctlproto.Segment
	wanted, others := 0, 0
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for wanted < 100 {
		kind, body, err := ctlproto.ReadFrame(conn, ctlproto.MaxFrame)
		if err != nil {
			t.Fatalf("after %d events: %v", wanted, err)
		}
		if kind != ctlproto.KindSegment {
			t.Fatalf("frame %q: %s", kind, body)
		}
		if err := ctlproto.ParseSegment(body, &seg); err != nil {
			t.Fatal(err)
		}
		if seg.Chunk != chunk {
			chunk, buf = seg.Chunk, buf[:0]
			live.Start(int(chunk-1), 0)
		}
		buf = append(buf, make([]byte, seg.Size-int64(len(buf)))...)
		for _, p := range seg.Parts {
			copy(buf[p.Offset:], p.Data)
		}
		if _, err := live.Extend(seg.Header, buf); err != nil {
			t.Fatal(err)
		}
		if err := live.LoadConstants(); err != nil {
			t.Fatal(err)
		}
		var ev jfr.Event
		for _, p := range seg.Parts {
			r := live.Reader(p.Offset, p.Offset+int64(len(p.Data)))
			for {
				err := r.ReadEvent(&ev)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if ev.Type.Name == "agenttest.Wanted" {
					wanted++
				} else if ev.Type.Name == "agenttest.Other" {
					others++
				}
			}
		}
	}
	if others != 0 {
		t.Errorf("%d agenttest.Other events streamed; the stream asked for Wanted only", others)
	}
	conn.Close()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		names := ""
		for _, r := range recorder.Recordings() {
			names += r.Name() + " "
		}
		if !strings.Contains(names, "stream-") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stream's recording outlives its client: %s", names)
		}
	}
}
