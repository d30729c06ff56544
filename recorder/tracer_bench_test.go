package recorder

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	rtrace "runtime/trace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	xtrace "golang.org/x/exp/trace"
)

// BenchmarkHTTPTracer measures what the execution tracer costs a
// scheduler-heavy server: a net/http server on loopback with 16 keep-alive
// clients and 2 KiB responses (the design note's workload). On a shared
// 2-core VM the machine's speed drifts by tens of percent from one second
// to the next, so each mode is compared with its baseline in paired
// rounds: an op is one round, the baseline and the mode back to back
// (their order alternating), each serving requests for httpHalfTime after
// a warm-up, with a recording of its own. Run it with -benchtime Nx for N
// rounds (15 or more). It reports the median and quartiles of the rounds'
// ratios, mode over baseline: requests per second (req/s-ratio) and the
// process's CPU time per request (cpu/req-ratio, which other processes
// distort less), and the memory the mode adds: the peak over each half of
// what the Go runtime holds from the OS (Sys less released heap: the
// tracer's buffers are in it), of the heap's objects, and of the
// process's RSS, as the median of the rounds' differences (extra-*-MiB).
//
// The modes, each against the default preset in the same destination
// (MODE-vs-BASE names the pair): file-tracediscard runs runtime/trace into
// io.Discard (what tracing itself costs), file-traceread has x/exp/trace read that trace as the
// stream does, converting nothing (what parsing adds), file-stream is the
// tracer's types streamed into a file recording; file-stream-samples adds
// jdk.ExecutionSample at the profile's 10 ms to both halves (the thread
// timeline that gives samples their goroutine). ring-fronly runs
// runtime/trace's FlightRecorder as the recorder configures it, alone
// (what the runtime costs), and ring-flight is the tracer's types in a
// ring, kept in that flight recorder (converted only at a dump, which
// this does not do), against a ring without it and against the runtime's
// flight recorder alone (what the recorder adds to it).
func BenchmarkHTTPTracer(b *testing.B) {
	body := strings.Repeat("x", 2048)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })}
	go srv.Serve(ln)
	defer srv.Close()
	url := fmt.Sprintf("http://%s/", ln.Addr())
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for _, pair := range [][2]string{{"file-tracediscard", "file-off"}, {"file-traceread", "file-off"}, {"file-stream", "file-off"},
		{"file-stream-samples", "file-off-samples"}, {"ring-fronly", "ring-off"}, {"ring-flight", "ring-off"}, {"ring-flight", "ring-fronly"}} {
		mode, base := pair[0], pair[1]
		b.Run(mode+"-vs-"+base, func(b *testing.B) {
			var rounds [2][]httpHalf // baseline, mode
			for i := range b.N {
				order := []string{base, mode}
				if i%2 == 1 {
					order[0], order[1] = mode, base
				}
				for _, m := range order {
					h := serveHalf(b, client, url, m)
					rounds[boolInt(m == mode)] = append(rounds[boolInt(m == mode)], h)
				}
			}
			ratio := func(f func(httpHalf) float64) []float64 {
				r := make([]float64, b.N)
				for i := range r {
					r[i] = f(rounds[1][i]) / f(rounds[0][i])
				}
				return r
			}
			diff := func(f func(httpHalf) float64) float64 {
				d := make([]float64, b.N)
				for i := range d {
					d[i] = (f(rounds[1][i]) - f(rounds[0][i])) / (1 << 20)
				}
				return median(d)
			}
			each := func(half int, f func(httpHalf) float64) []float64 {
				v := make([]float64, b.N)
				for i := range v {
					v[i] = f(rounds[half][i])
				}
				return v
			}
			reqs := func(h httpHalf) float64 { return h.reqPerSec }
			cpu := func(h httpHalf) float64 { return h.cpuPerReq }
			r := ratio(reqs)
			b.ReportMetric(median(r), "req/s-ratio")
			b.ReportMetric(quantile(r, 0.25), "req/s-ratio-q1")
			b.ReportMetric(quantile(r, 0.75), "req/s-ratio-q3")
			c := ratio(cpu)
			b.ReportMetric(median(c), "cpu/req-ratio")
			b.ReportMetric(quantile(c, 0.25), "cpu/req-ratio-q1")
			b.ReportMetric(quantile(c, 0.75), "cpu/req-ratio-q3")
			b.ReportMetric(median(each(0, reqs)), "base-req/s")
			b.ReportMetric(median(each(1, reqs)), "req/s")
			b.ReportMetric(median(each(1, cpu)), "cpu-us/req")
			b.ReportMetric(diff(func(h httpHalf) float64 { return h.goHeld }), "extra-go-MiB")
			b.ReportMetric(diff(func(h httpHalf) float64 { return h.heap }), "extra-heap-MiB")
			b.ReportMetric(diff(func(h httpHalf) float64 { return h.rss }), "extra-rss-MiB")
			b.ReportMetric(median(each(1, func(h httpHalf) float64 { return h.rss }))/(1<<20), "rss-MiB")
		})
	}
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

// httpHalf is one half of a round: the server's rate and CPU time per
// request, and the peaks of its memory (bytes).
type httpHalf struct {
	reqPerSec, cpuPerReq float64
	goHeld, heap, rss    float64
}

const (
	httpWarmup   = 250 * time.Millisecond
	httpHalfTime = time.Second
)

// serveHalf serves requests for httpHalfTime (after httpWarmup) under a
// recording of mode, started after the memory of the last half was given
// back to the OS.
func serveHalf(b *testing.B, client *http.Client, url, mode string) httpHalf {
	runtime.GC()
	debug.FreeOSMemory()
	settings, _ := Preset("default")
	if strings.Contains(mode, "stream") || strings.HasSuffix(mode, "flight") {
		for _, n := range tracerTypeNames {
			settings[n] = Setting{Enabled: Bool(true), Threshold: Duration(tracerThresholds[n])}
		}
	}
	if strings.HasSuffix(mode, "-samples") {
		settings["jdk.ExecutionSample"] = Setting{Enabled: Bool(true), Period: Duration(10 * time.Millisecond)}
	}
	dest := WithRing(32<<20, 0) // rings take the flight recorder
	if strings.HasPrefix(mode, "file") {
		dest = WithFile(filepath.Join(b.TempDir(), "bench.jfr")) // files, the stream
	}
	rec, err := Start(dest, WithSettings(settings))
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Stop()
	switch mode {
	case "file-tracediscard":
		if err := rtrace.Start(io.Discard); err != nil {
			b.Fatal(err)
		}
		defer rtrace.Stop()
	case "file-traceread":
		defer readTraceOnly(b)()
	case "ring-fronly":
		fr := rtrace.NewFlightRecorder(rtrace.FlightRecorderConfig{MaxBytes: flightWindow})
		if err := fr.Start(); err != nil {
			b.Fatal(err)
		}
		defer fr.Stop()
	}
	var served atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				resp, err := client.Get(url)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				served.Add(1)
			}
		}()
	}
	time.Sleep(httpWarmup)
	var h httpHalf
	peaks := sampleMemory(&h)
	n0, t0 := served.Load(), time.Now()
	u0, s0 := processCPU()
	time.Sleep(httpHalfTime)
	n1, t1 := served.Load(), time.Now()
	u1, s1 := processCPU()
	peaks()
	stop.Store(true)
	wg.Wait()
	h.reqPerSec = float64(n1-n0) / t1.Sub(t0).Seconds()
	h.cpuPerReq = float64((u1 + s1 - u0 - s0).Microseconds()) / float64(n1-n0)
	return h
}

// sampleMemory keeps the peaks of h's memory, sampled every 20 ms until
// the function it returns is called.
func sampleMemory(h *httpHalf) func() {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(s)
		h.goHeld = max(h.goHeld, float64(s[0].Value.Uint64()-s[1].Value.Uint64()))
		h.heap = max(h.heap, float64(s[2].Value.Uint64()))
		h.rss = max(h.rss, float64(residentBytes()))
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			read()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// residentBytes is the process's resident set (Linux), or 0.
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// readTraceOnly runs runtime/trace into a pipe that x/exp/trace reads
// event by event, as the stream's converter does, and returns what stops
// it.
func readTraceOnly(b *testing.B) func() {
	pr, pw := io.Pipe()
	if err := rtrace.Start(pw); err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		r, err := xtrace.NewReader(bufio.NewReaderSize(pr, 256<<10)) // as gotrace.Convert reads
		for err == nil {
			_, err = r.ReadEvent()
		}
		if err == io.EOF {
			err = nil
		}
		pr.CloseWithError(err)
		done <- err
	}()
	return func() {
		rtrace.Stop()
		pw.Close()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}
}
