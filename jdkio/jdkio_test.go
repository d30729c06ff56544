package jdkio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flightrec/flightrec/internal/testrec"
	"github.com/flightrec/flightrec/jfr"
	"github.com/flightrec/flightrec/recorder"
)

var ioTypes = []string{"jdk.SocketRead", "jdk.SocketWrite", "jdk.FileRead", "jdk.FileWrite", "jdk.FileForce"}

// allSettings records every I/O event, however short: the threshold
// setting written as jcmd's options are.
func allSettings(t *testing.T) recorder.Settings {
	t.Helper()
	var specs []string
	for _, n := range ioTypes {
		specs = append(specs, n+"#threshold=0")
	}
	s, err := recorder.ParseSettingSpecs(specs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// record runs fn while recording to a file with settings s and returns
// the file's path.
func record(t *testing.T, s recorder.Settings, fn func()) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "io.jfr")
	rec, err := recorder.Start(recorder.WithFile(path), recorder.WithSettings(s))
	if err != nil {
		t.Fatal(err)
	}
	fn()
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	return path
}

// ioEvent is an I/O event as our reader reads it back.
type ioEvent struct {
	typ      string
	start    time.Time
	duration time.Duration
	thread   int64 // the goroutine id (javaThreadId)
	frames   int
	fields   map[string]any // the event's own fields: string, int64 or bool
}

func readEvents(t *testing.T, path string) []ioEvent {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := jfr.NewBytesReader(data, nil)
	var out []ioEvent
	var ev jfr.Event
	for {
		err := r.ReadEvent(&ev)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !strings.HasPrefix(ev.Type.Name, "jdk.Socket") && !strings.HasPrefix(ev.Type.Name, "jdk.File") {
			continue
		}
		e := ioEvent{typ: ev.Type.Name, start: ev.StartTime(), duration: ev.Duration(), fields: map[string]any{}}
		th, _ := ev.Field("eventThread")
		id, _ := th.Field("javaThreadId")
		e.thread = id.Int()
		if st, ok := ev.Field("stackTrace"); ok && !st.Resolve().IsNull() {
			frames, _ := st.Field("frames")
			e.frames = frames.Len()
		}
		for _, f := range ev.Type.Fields[4:] {
			v, _ := ev.Field(f.Name)
			switch v.Kind() {
			case jfr.KindString, jfr.KindNull:
				e.fields[f.Name] = v.Resolve().String()
			case jfr.KindBool:
				e.fields[f.Name] = v.Bool()
			default:
				e.fields[f.Name] = v.Int()
			}
		}
		out = append(out, e)
	}
	// In the order they began: a file holds them by buffer.
	sort.SliceStable(out, func(i, j int) bool { return out[i].start.Before(out[j].start) })
	return out
}

// jfrPrinted returns the values of the I/O events as `jfr print --json`
// prints them, and checks that `jfr summary` reads the file.
func jfrPrinted(t *testing.T, path string) []map[string]any {
	t.Helper()
	out := testrec.RunJFR(t, "print", "--json", "--events", strings.Join(ioTypes, ","), path)
	var doc struct {
		Recording struct {
			Events []struct {
				Type   string         `json:"type"`
				Values map[string]any `json:"values"`
			} `json:"events"`
		} `json:"recording"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	var vals []map[string]any
	for _, e := range doc.Recording.Events {
		e.Values["type"] = e.Type
		vals = append(vals, e.Values)
	}
	sum := string(testrec.RunJFR(t, "summary", path))
	for _, e := range doc.Recording.Events {
		if !strings.Contains(sum, e.Type) {
			t.Errorf("jfr summary does not list %s:\n%s", e.Type, sum)
		}
	}
	return vals
}

// checkHonest fails unless every socket event has a peer and every file
// event a path.
func checkHonest(t *testing.T, evs []ioEvent) {
	t.Helper()
	for _, e := range evs {
		if strings.HasPrefix(e.typ, "jdk.Socket") && (e.fields["address"] == "" || e.fields["port"].(int64) <= 0) {
			t.Errorf("%s without a peer: %v", e.typ, e.fields)
		}
		if strings.HasPrefix(e.typ, "jdk.File") && e.fields["path"] == "" {
			t.Errorf("%s without a path: %v", e.typ, e.fields)
		}
		if e.thread == 0 {
			t.Errorf("%s without its goroutine: %v", e.typ, e.fields)
		}
	}
}

// sum adds field of the events of type typ that match where.
func sum(evs []ioEvent, typ, field string, where func(ioEvent) bool) (total int64, n int) {
	for _, e := range evs {
		if e.typ == typ && where(e) {
			total += e.fields[field].(int64)
			n++
		}
	}
	return total, n
}

// TestSocketEvents sends 1000 bytes from a client dialed by name to a
// server that accepts through a wrapped listener, which answers with 300
// bytes: the events, read back by our reader and by `jfr print --json`,
// carry what was done.
func TestSocketEvents(t *testing.T) {
	var serverPort, clientPort int64
	var serverErr error
	path := record(t, allSettings(t), func() {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ln = WrapListener(ln)
		serverPort = int64(ln.Addr().(*net.TCPAddr).Port)
		done := make(chan struct{})
		go func() {
			defer close(done)
			c, err := ln.Accept()
			if err != nil {
				serverErr = err
				return
			}
			defer c.Close()
			if _, ok := c.(*Conn); !ok {
				serverErr = fmt.Errorf("accepted %T, not wrapped", c)
				return
			}
			c.SetReadDeadline(time.Now().Add(time.Minute))
			got, err := io.ReadAll(c)
			if err != nil || len(got) != 1000 {
				serverErr = fmt.Errorf("server read %d bytes: %v", len(got), err)
				return
			}
			_, serverErr = c.Write(bytes.Repeat([]byte("r"), 300))
		}()
		var d net.Dialer
		c, err := DialContext(d.DialContext)(context.Background(), "tcp4", fmt.Sprintf("localhost:%d", serverPort))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clientPort = int64(c.LocalAddr().(*net.TCPAddr).Port)
		if _, err := c.Write(bytes.Repeat([]byte("q"), 1000)); err != nil {
			t.Fatal(err)
		}
		if err := c.(*Conn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		reply, err := io.ReadAll(c)
		if err != nil || len(reply) != 300 {
			t.Fatalf("client read %d bytes: %v", len(reply), err)
		}
		<-done
	})
	if serverErr != nil {
		t.Fatal(serverErr)
	}
	evs := readEvents(t, path)
	checkHonest(t, evs)
	toServer := func(e ioEvent) bool { return e.fields["port"] == serverPort }
	toClient := func(e ioEvent) bool { return e.fields["port"] == clientPort }
	for _, c := range []struct {
		typ, field string
		where      func(ioEvent) bool
		want       int64
	}{
		{"jdk.SocketWrite", "bytesWritten", toServer, 1000},
		{"jdk.SocketRead", "bytesRead", toClient, 1000},
		{"jdk.SocketWrite", "bytesWritten", toClient, 300},
		{"jdk.SocketRead", "bytesRead", toServer, 300},
	} {
		if got, n := sum(evs, c.typ, c.field, c.where); got != c.want || n == 0 {
			t.Errorf("%s: %s add up to %d in %d events, want %d", c.typ, c.field, got, n, c.want)
		}
	}
	for _, e := range evs {
		host, addr := e.fields["host"], e.fields["address"]
		switch {
		case addr != "127.0.0.1":
			t.Errorf("%s: address %q, want 127.0.0.1", e.typ, addr)
		case toServer(e) && host != "localhost":
			t.Errorf("%s by the client: host %q, want the name it dialed, localhost", e.typ, host)
		case toClient(e) && host != "":
			t.Errorf("%s by the server: host %q, want none (unknown, as the JDK's)", e.typ, host)
		case !toServer(e) && !toClient(e):
			t.Errorf("%s: port %v is neither end's", e.typ, e.fields["port"])
		}
		if e.frames == 0 {
			t.Errorf("%s without a stack trace", e.typ)
		}
		if e.typ != "jdk.SocketRead" {
			continue
		}
		// The server read with a deadline a minute away; the client with none.
		timeout := e.fields["timeout"].(int64)
		if toClient(e) && (timeout < 50_000 || timeout > 60_000) || toServer(e) && timeout != 0 {
			t.Errorf("%s by port %v: timeout %d ms", e.typ, e.fields["port"], timeout)
		}
	}
	for _, where := range []func(ioEvent) bool{toServer, toClient} {
		var last ioEvent
		for _, e := range evs {
			if e.typ == "jdk.SocketRead" && where(e) {
				if last.typ != "" && last.fields["endOfStream"] == true {
					t.Errorf("a read after the end of the stream: %v", e.fields)
				}
				last = e
			}
		}
		if last.fields["endOfStream"] != true || last.fields["bytesRead"] != int64(0) {
			t.Errorf("the last read of port %v: %v, want the end of the stream", last.fields["port"], last.fields)
		}
	}

	printed := jfrPrinted(t, path)
	if len(printed) != len(evs) {
		t.Fatalf("jfr printed %d events, our reader read %d", len(printed), len(evs))
	}
	var written float64
	for _, v := range printed {
		if v["type"] == "jdk.SocketWrite" && v["port"] == float64(serverPort) {
			if v["host"] != "localhost" || v["address"] != "127.0.0.1" {
				t.Errorf("jfr print --json: %v", v)
			}
			written += v["bytesWritten"].(float64)
		}
		if v["type"] == "jdk.SocketRead" && v["port"] == float64(clientPort) && v["host"] != "" {
			t.Errorf("jfr print --json: host %q of an accepted connection", v["host"])
		}
	}
	if written != 1000 {
		t.Errorf("jfr print --json: the client wrote %v bytes, want 1000", written)
	}
}

// TestFileEvents writes, syncs and reads a temporary file through the
// wrapper.
func TestFileEvents(t *testing.T) {
	name := filepath.Join(t.TempDir(), "data.bin")
	path := record(t, allSettings(t), func() {
		f, err := Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(bytes.Repeat([]byte("w"), 1000)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("0123456789"), 2000); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("tail"); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		f, err = Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil || len(b) != 2010 {
			t.Fatalf("read %d bytes: %v", len(b), err)
		}
		if n, err := f.ReadAt(make([]byte, 100), 1950); n != 60 || err != io.EOF {
			t.Fatalf("ReadAt: %d, %v", n, err)
		}
	})
	evs := readEvents(t, path)
	checkHonest(t, evs)
	var writes []int64
	var force, eofs int
	for _, e := range evs {
		if e.fields["path"] != name {
			t.Errorf("%s: path %q, want %q", e.typ, e.fields["path"], name)
		}
		switch e.typ {
		case "jdk.FileWrite":
			writes = append(writes, e.fields["bytesWritten"].(int64))
		case "jdk.FileForce":
			force++
			if e.fields["metaData"] != true {
				t.Errorf("FileForce of an fsync without metaData")
			}
		case "jdk.FileRead":
			if e.fields["endOfFile"] == true {
				eofs++
			}
		}
	}
	if fmt.Sprint(writes) != "[1000 10 4]" || force != 1 {
		t.Errorf("writes %v, forces %d; want [1000 10 4] and 1", writes, force)
	}
	// io.ReadAll's reads, the last at the end of the file, and ReadAt's 60
	// bytes, which end at it too.
	if total, n := sum(evs, "jdk.FileRead", "bytesRead", func(ioEvent) bool { return true }); total != 2010+60 || n < 3 || eofs != 2 {
		t.Errorf("reads: %d bytes in %d events, %d at the end of the file; want %d, 2 at the end", total, n, eofs, 2010+60)
	}

	printed := jfrPrinted(t, path)
	if len(printed) != len(evs) {
		t.Fatalf("jfr printed %d events, our reader read %d", len(printed), len(evs))
	}
	for _, v := range printed {
		if v["path"] != name {
			t.Errorf("jfr print --json: %v", v)
		}
		if v["type"] == "jdk.FileWrite" && v["bytesWritten"] == float64(1000) {
			writes = writes[1:]
		}
	}
	if len(writes) != 2 {
		t.Errorf("jfr print --json does not show the write of 1000 bytes")
	}
}

// TestThresholds: the JDK's thresholds are the presets'; an operation
// shorter than its type's threshold is not recorded, a longer one is.
func TestThresholds(t *testing.T) {
	for preset, want := range map[string]time.Duration{"default": 20 * time.Millisecond, "profile": 10 * time.Millisecond} {
		s, _ := recorder.Preset(preset)
		for _, n := range ioTypes {
			if th := s[n].Threshold; th == nil || *th != want {
				t.Errorf("preset %s: %s threshold %v, want %v", preset, n, th, want)
			}
		}
	}

	const threshold = 200 * time.Millisecond
	s := recorder.Settings{}
	for _, n := range ioTypes {
		s[n] = recorder.Setting{Threshold: recorder.Duration(threshold)}
	}
	var slowPort int64
	var quick []time.Duration // of the quick reads, as the test saw them
	path := record(t, s, func() {
		a, b := tcpPair(t)
		defer a.Close()
		defer b.Close()
		slowPort = int64(a.RemoteAddr().(*net.TCPAddr).Port)
		buf := make([]byte, 10)
		for range 20 {
			b.Write([]byte("x"))
			start := time.Now()
			a.Read(buf)
			quick = append(quick, time.Since(start))
		}
		go func() {
			time.Sleep(threshold + 100*time.Millisecond)
			b.Write([]byte("late"))
		}()
		if n, err := a.Read(buf); n != 4 || err != nil {
			t.Errorf("slow read: %d, %v", n, err)
		}
	})
	evs := readEvents(t, path)
	checkHonest(t, evs)
	allowed := 0 // quick reads that took long on a loaded machine
	for _, d := range quick {
		if d >= threshold {
			allowed++
		}
	}
	slow := 0
	for _, e := range evs {
		if e.duration < threshold {
			t.Errorf("%s of %v recorded under a threshold of %v", e.typ, e.duration, threshold)
		}
		if e.typ == "jdk.SocketRead" && e.fields["bytesRead"] == int64(4) && e.fields["port"] == slowPort {
			slow++
		}
	}
	if slow != 1 || len(evs) > 1+allowed {
		t.Errorf("%d events, %d of them the slow read; want the slow read alone", len(evs), slow)
	}
}

// tcpPair returns the two ends of a loopback TCP connection, a wrapped.
func tcpPair(t testing.TB) (a, b net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	return WrapConn(c), s
}

// TestNoEventWithoutPeerOrPath: connections without an IP peer and files
// without a name are left unrecorded, however low the threshold.
func TestNoEventWithoutPeerOrPath(t *testing.T) {
	p1, p2 := net.Pipe()
	if w := WrapConn(p1); w != p1 {
		t.Errorf("WrapConn(net.Pipe()) = %T, want the pipe itself", w)
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ln = WrapListener(ln)
	path := record(t, allSettings(t), func() {
		go func() {
			c, err := ln.Accept()
			if err == nil {
				io.Copy(c, c)
				c.Close()
			}
		}()
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		c = WrapConn(c)
		c.Write([]byte("ping"))
		c.Read(make([]byte, 4))
		c.Close()
		go p2.Write([]byte("x"))
		WrapConn(p1).Read(make([]byte, 1))

		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		nameless := WrapFile(os.NewFile(w.Fd(), ""))
		if _, err := nameless.Write([]byte("data")); err != nil {
			t.Fatal(err)
		}
		w.Close()
	})
	if evs := readEvents(t, path); len(evs) != 0 {
		t.Errorf("%d events without a peer or a path: %v", len(evs), evs)
	}
}

// TestDisabledAndEnabledAllocs: a wrapped call allocates nothing more than
// the call it wraps, recorded or not.
func TestDisabledAndEnabledAllocs(t *testing.T) {
	a, b := tcpPair(t)
	defer a.Close()
	defer b.Close()
	buf := make([]byte, 8)
	roundTrip := func() {
		a.Write(buf)
		io.ReadFull(b, buf)
		b.Write(buf)
		io.ReadFull(a, buf)
	}
	roundTrip()
	if n := testing.AllocsPerRun(100, roundTrip); n != 0 {
		t.Errorf("disabled: %v allocations a round trip", n)
	}
	var n float64
	record(t, allSettings(t), func() {
		roundTrip()
		n = testing.AllocsPerRun(100, roundTrip)
	})
	if n != 0 {
		t.Errorf("enabled: %v allocations a round trip", n)
	}
}

func TestCloseWriteUnsupported(t *testing.T) {
	c := &Conn{Conn: nopConn{}}
	if err := c.CloseWrite(); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("CloseWrite of a connection without one: %v", err)
	}
}

// nopConn is a connection to 127.0.0.1:9 whose reads and writes do
// nothing, to measure the wrapper alone.
type nopConn struct{ net.Conn }

func (nopConn) Read(b []byte) (int, error)  { return len(b), nil }
func (nopConn) Write(b []byte) (int, error) { return len(b), nil }
func (nopConn) RemoteAddr() net.Addr        { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9} }

// TestStackTraceSetting: a type's stackTrace setting turns its stack
// traces off.
func TestStackTraceSetting(t *testing.T) {
	s := allSettings(t)
	s["jdk.FileWrite"] = recorder.Setting{Threshold: recorder.Duration(0), StackTrace: recorder.Bool(false)}
	name := filepath.Join(t.TempDir(), "f")
	path := record(t, s, func() {
		f, err := Create(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("x"))
		f.Sync()
		f.Close()
	})
	evs := readEvents(t, path)
	if len(evs) != 2 {
		t.Fatalf("%d events, want a write and a force", len(evs))
	}
	for _, e := range evs {
		if (e.frames > 0) != (e.typ == "jdk.FileForce") {
			t.Errorf("%s: %d frames", e.typ, e.frames)
		}
	}
}

// TestExpiredDeadline: a read that fails at once on a deadline already
// past is recorded as the JDK records a failed read: no bytes, and the
// smallest timeout the field can say, not 0 (none).
func TestExpiredDeadline(t *testing.T) {
	a, b := tcpPair(t)
	defer a.Close()
	defer b.Close()
	path := record(t, allSettings(t), func() {
		a.SetReadDeadline(time.Now().Add(-time.Second))
		if _, err := a.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read past the deadline: %v", err)
		}
	})
	evs := readEvents(t, path)
	if len(evs) != 1 || evs[0].fields["bytesRead"] != int64(0) || evs[0].fields["timeout"] != int64(1) || evs[0].fields["endOfStream"] != false {
		t.Errorf("events %v, want one read of 0 bytes with a timeout of 1 ms", evs)
	}
}
