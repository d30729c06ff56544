package recorder

import (
	"bytes"
	"github.com/flightrec/flightrec/internal/jfrstack"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	rtrace "runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"

	xtrace "golang.org/x/exp/trace"

	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/jfr"
)

//go:noinline
func tracedLock(mu *sync.Mutex) { mu.Lock() }

// contend makes n goroutines wait 30 ms each for a mutex the calling
// goroutine holds, and returns the calling goroutine's id.
func contend(n int) uint64 {
	var mu sync.Mutex
	for range n {
		mu.Lock()
		done := make(chan struct{})
		go func() { tracedLock(&mu); mu.Unlock(); close(done) }()
		time.Sleep(30 * time.Millisecond)
		mu.Unlock()
		<-done
	}
	return uint64(event.CurrentGoroutine())
}

func recordProfile(t *testing.T, body func()) []byte {
	t.Helper()
	prof, _ := Preset("profile")
	path := filepath.Join(t.TempDir(), "rec.jfr")
	rec, err := Start(WithFile(path), WithSettings(prof))
	if err != nil {
		t.Fatal(err)
	}
	body()
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestTracerEvents records with the profile preset: the execution tracer
// streams mutex waits with their waker as previous owner, and GC cycles
// come from it alone (none twice); runtime/trace is free again after Stop.
func TestTracerEvents(t *testing.T) {
	var owner uint64
	data := recordProfile(t, func() {
		owner = contend(3)
		runtime.GC()
		runtime.GC()
	})
	waits, systemGCs := 0, 0
	gcIDs := map[int64]int{}
	eachEvent(t, data, func(ev *jfr.Event) {
		switch ev.Type.Name {
		case "jdk.JavaMonitorEnter":
			st, _ := ev.Field("stackTrace")
			fr, _ := st.Field("frames")
			inLock := false
			for _, f := range fr.Elems() {
				m, _ := f.Field("method")
				n, _ := m.Field("name")
				inLock = inLock || jfrstack.Text(n) == "tracedLock"
			}
			if !inLock {
				return
			}
			waits++
			cl, _ := ev.Field("monitorClass")
			cn, _ := cl.Field("name")
			po, _ := ev.Field("previousOwner")
			id, _ := po.Field("javaThreadId")
			if jfrstack.Text(cn) != "sync.Mutex" || uint64(id.Int()) != owner || ev.Duration() < 10*time.Millisecond {
				t.Errorf("monitor enter: class %q, previous owner %d (want %d), %v", jfrstack.Text(cn), id.Int(), owner, ev.Duration())
			}
		case "jdk.GarbageCollection":
			id, _ := ev.Field("gcId")
			gcIDs[id.Int()]++
			if c, _ := ev.Field("cause"); jfrstack.Text(c) == "System.gc()" {
				systemGCs++
			}
		}
	})
	if waits != 3 || systemGCs < 2 {
		t.Errorf("%d mutex waits (want 3), %d System.gc() (want 2)", waits, systemGCs)
	}
	for id, n := range gcIDs {
		if n > 1 {
			t.Errorf("GC %d written %d times", id, n)
		}
	}
	checkSummary(t, writeTemp(t, data))
	// The tracer is the program's again.
	if err := rtrace.Start(io.Discard); err != nil {
		t.Fatalf("trace.Start after the recording: %v", err)
	}
	rtrace.Stop()
}

func writeTemp(t *testing.T, data []byte) string {
	path := filepath.Join(t.TempDir(), "r.jfr")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTracerLeavesUserTrace starts a recording while the program traces
// itself: its trace goes on whole, and the tracer's types say why they
// have no events.
func TestTracerLeavesUserTrace(t *testing.T) {
	var user bytes.Buffer
	if err := rtrace.Start(&user); err != nil {
		t.Skipf("the tracer is taken already: %v", err)
	}
	data := recordProfile(t, func() { contend(1) })
	rtrace.Stop()
	said := ""
	eachEvent(t, data, func(ev *jfr.Event) {
		if ev.Type.Name == "jdk.ActiveSetting" {
			n, _ := ev.Field("name")
			v, _ := ev.Field("value")
			if n.String() == "tracer" {
				said = v.String()
			}
		}
		if ev.Type.Name == "jdk.JavaMonitorEnter" {
			t.Errorf("a monitor event without the tracer")
		}
	})
	if !strings.HasPrefix(said, "not running:") {
		t.Errorf("tracer setting %q", said)
	}
	// The program's own trace is whole.
	r, err := xtrace.NewReader(&user)
	if err != nil {
		t.Fatal(err)
	}
	for {
		_, err := r.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the program's trace: %v", err)
		}
	}
}

// TestTracerLagDropsGenerations slows the converter down: the watchdog
// drops the queued trace, writes jdk.DataLoss, and tracing goes on.
func TestTracerLagDropsGenerations(t *testing.T) {
	defer func(lag time.Duration) { maxTraceLag, slowConverter = lag, nil }(maxTraceLag)
	maxTraceLag = 100 * time.Millisecond
	slowConverter = func() { time.Sleep(1500 * time.Millisecond) }
	data := recordProfile(t, func() {
		end := time.Now().Add(4 * time.Second)
		for time.Now().Before(end) {
			contend(1)
		}
	})
	lost := int64(0)
	eachEvent(t, data, func(ev *jfr.Event) {
		if ev.Type.Name == "jdk.DataLoss" {
			a, _ := ev.Field("amount")
			lost += a.Int()
		}
	})
	if lost == 0 {
		t.Error("no jdk.DataLoss after the converter lagged")
	}
	t.Logf("%d bytes of trace lost", lost)
}

// TestTracerFlightRecorder records into a ring while the program traces
// itself: the flight recorder, which leaves trace.Start to the program,
// gives the dump its mutex waits, and the program's trace is whole.
func TestTracerFlightRecorder(t *testing.T) {
	var user bytes.Buffer
	if err := rtrace.Start(&user); err != nil {
		t.Skipf("the tracer is taken already: %v", err)
	}
	prof, _ := Preset("profile")
	rec, err := Start(WithRing(16<<20, 0), WithSettings(prof))
	if err != nil {
		t.Fatal(err)
	}
	owner := contend(2)
	data := dumped(t, rec)
	if err := rec.Stop(); err != nil {
		t.Fatal(err)
	}
	rtrace.Stop()
	waits := 0
	eachEvent(t, data, func(ev *jfr.Event) {
		if ev.Type.Name != "jdk.JavaMonitorEnter" {
			return
		}
		st, _ := ev.Field("stackTrace")
		fr, _ := st.Field("frames")
		for _, f := range fr.Elems() {
			m, _ := f.Field("method")
			if n, _ := m.Field("name"); jfrstack.Text(n) == "tracedLock" {
				waits++
				po, _ := ev.Field("previousOwner")
				if id, _ := po.Field("javaThreadId"); uint64(id.Int()) != owner {
					t.Errorf("previous owner %d, want %d", id.Int(), owner)
				}
				break
			}
		}
	})
	if waits != 2 {
		t.Errorf("%d mutex waits in the dump, want 2", waits)
	}
	checkSummary(t, writeTemp(t, data))
	r, err := xtrace.NewReader(&user)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := r.ReadEvent(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("the program's trace: %v", err)
		}
	}
}

// waitForPeer reads one byte from c, which its peer writes late.
//
//go:noinline
func waitForPeer(c net.Conn) { c.Read(make([]byte, 1)) }

// TestTracerNetworkWait records with the profile preset: a goroutine
// waiting 150 ms in the network poller gives a go.NetworkWait of Go's own
// type (no JDK twin: no peer or byte count is invented), on its goroutine
// and with its stack, which our reader and jfr read.
func TestTracerNetworkWait(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	data := recordProfile(t, func() {
		accepted := make(chan net.Conn, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s := <-accepted
		if s == nil {
			t.Fatal("accept failed")
		}
		defer s.Close()
		go func() { time.Sleep(150 * time.Millisecond); s.Write([]byte{1}) }()
		waitForPeer(c)
		time.Sleep(1200 * time.Millisecond) // the trace's generation ends, the converter catches up
	})
	var waits []time.Duration
	eachEvent(t, data, func(ev *jfr.Event) {
		if ev.Type.Name != "go.NetworkWait" {
			return
		}
		st, _ := ev.Field("stackTrace")
		fr, _ := st.Field("frames")
		for _, f := range fr.Elems() {
			m, _ := f.Field("method")
			n, _ := m.Field("name")
			if jfrstack.Text(n) == "waitForPeer" {
				waits = append(waits, ev.Duration())
			}
		}
	})
	if len(waits) != 1 || waits[0] < 120*time.Millisecond || waits[0] > 2*time.Second {
		t.Errorf("go.NetworkWait in waitForPeer: %v, want one of about 150 ms", waits)
	}
	checkSummary(t, writeTemp(t, data))
}
