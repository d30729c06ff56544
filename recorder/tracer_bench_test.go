package recorder

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkHTTPTracer measures what the execution tracer costs a
// scheduler-heavy server: a net/http server on loopback with 16 keep-alive
// clients and 2 KiB responses (the design note's workload), recorded with
// the default preset (off) and with the tracer's types on: streamed into
// a file recording, or kept in the flight recorder for a ring (converted
// only at a dump, which this does not do). -count repeats each mode in a
// row: to interleave them, run the benchmark several times with -count 1. It reports requests per second and
// the memory the Go runtime holds from the OS at the end (go-MiB: Sys
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
	for _, mode := range []string{"file-off", "file-stream", "ring-off", "ring-flight"} {
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
			tr := &http.Transport{MaxIdleConnsPerHost: 16}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			var next sync.Mutex
			left := b.N
			b.ResetTimer()
			start := time.Now()
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
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.Sys-ms.HeapReleased)/(1<<20), "go-MiB")
		})
	}
}
