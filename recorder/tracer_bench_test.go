package recorder

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	rtrace "runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"

	xtrace "golang.org/x/exp/trace"
)

// BenchmarkHTTPTracer measures what the execution tracer costs a
// scheduler-heavy server: a net/http server on loopback with 16 keep-alive
// clients and 2 KiB responses (the design note's workload), recorded with
// the default preset (off) and with the tracer's types on: streamed into
// a file recording, or kept in the flight recorder for a ring (converted
// only at a dump, which this does not do). Two more modes split the
// stream's cost: file-tracediscard runs runtime/trace into io.Discard
// (what tracing itself costs), file-traceread has x/exp/trace read that
// trace as the stream does, converting nothing (what parsing adds). -count
// repeats each mode in a row: to interleave them, run the benchmark several
// times with -count 1. It reports requests per second, the process's CPU
// time per request (cpu-us/req, what the server and its clients cost on a
// machine shared with other work, where req/s mostly measures the others),
// and the memory the Go runtime holds from the OS at the end (go-MiB: Sys
// less what the heap released), the tracer's buffers included.
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
	for _, mode := range []string{"file-off", "file-tracediscard", "file-traceread", "file-stream", "ring-off", "ring-flight"} {
		b.Run(mode, func(b *testing.B) {
			settings, _ := Preset("default")
			if strings.HasSuffix(mode, "stream") || strings.HasSuffix(mode, "flight") {
				for _, n := range tracerTypeNames {
					settings[n] = Setting{Enabled: Bool(true), Threshold: Duration(tracerThresholds[n])}
				}
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
			}
			tr := &http.Transport{MaxIdleConnsPerHost: 16}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			var next sync.Mutex
			left := b.N
			b.ResetTimer()
			start := time.Now()
			u0, s0 := processCPU()
			var wg sync.WaitGroup
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						next.Lock()
						if left == 0 {
							next.Unlock()
							return
						}
						left--
						next.Unlock()
						resp, err := client.Get(url)
						if err != nil {
							b.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
			if u1, s1 := processCPU(); u1+s1 > u0+s0 {
				b.ReportMetric(float64((u1+s1-u0-s0).Microseconds())/float64(b.N), "cpu-us/req")
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.Sys-ms.HeapReleased)/(1<<20), "go-MiB")
		})
	}
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
