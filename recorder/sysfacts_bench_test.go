package recorder

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/flightrec/flightrec/jfr"
)

// BenchmarkSystemFacts measures what the system facts cost an HTTP server:
// 4 keep-alive clients on loopback get 2 KiB responses, in rounds of
// 8000 requests (1 to 2 s here), each under a recording of its own (the
// preset default), with the facts on and off in turn, each first in turn,
// so that drift in the machine's speed falls on both alike. Chunks are cut
// every second, and the facts gathered and written at each, where a file
// recording cuts one per 12 MB (a ring with a maximum age of 4 s cuts one
// a second): this bounds their cost from above. It reports the requests per
// second of each and facts-overhead-%, how much longer the rounds with
// facts took than the rounds beside them (the median of the pairs, which
// a round slowed by the machine's other work moves least), and
// facts-cpu-overhead-%, the same of the process's CPU time (getrusage),
// which other processes on a loaded machine disturb less. b.N counts
// requests.
func BenchmarkSystemFacts(b *testing.B) {
	const clients, perRound = 4, 8000
	body := bytes.Repeat([]byte("x"), 2048)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(body) }))
	defer srv.Close()
	tr := srv.Client().Transport.(*http.Transport)
	tr.MaxIdleConnsPerHost = clients
	client := &http.Client{Transport: tr}
	get := func() {
		resp, err := client.Get(srv.URL)
		if err != nil {
			b.Error(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	cpu := func() time.Duration { u, s := processCPU(); return u + s }
	// round returns the round's wall time and the process's CPU time in it.
	round := func() (time.Duration, time.Duration) {
		var wg sync.WaitGroup
		c0, t0 := cpu(), time.Now()
		for range clients {
			wg.Go(func() {
				for range perRound / clients {
					get()
				}
			})
		}
		wg.Wait()
		return time.Since(t0), cpu() - c0
	}
	noFacts := Settings{}
	for _, name := range factTypeNames {
		noFacts[name] = Setting{Enabled: Bool(false)}
	}
	for range perRound { // warm the connections and the server up
		get()
	}
	var with, without time.Duration
	var rounds int
	var ratios, cpuRatios []float64
	b.ResetTimer()
	for n := 0; n < b.N; n += 2 * perRound {
		var pair, cpuPair [2]time.Duration
		for k := range 2 {
			facts := k == rounds%2
			opts := []Option{WithRing(16<<20, 0), WithMaxChunkAge(time.Second)}
			if !facts {
				opts = append(opts, WithSettings(noFacts))
			}
			rec, err := Start(opts...)
			if err != nil {
				b.Fatal(err)
			}
			d, c := round()
			if err := rec.Stop(); err != nil {
				b.Fatal(err)
			}
			if facts {
				with += d
				pair[0], cpuPair[0] = d, c
			} else {
				without += d
				pair[1], cpuPair[1] = d, c
			}
		}
		ratios = append(ratios, float64(pair[0])/float64(pair[1]))
		cpuRatios = append(cpuRatios, float64(cpuPair[0])/float64(cpuPair[1]))
		rounds++
	}
	b.StopTimer()
	n := float64(rounds * perRound)
	b.ReportMetric(n/with.Seconds(), "req/s-facts")
	b.ReportMetric(n/without.Seconds(), "req/s-nofacts")
	slices.Sort(ratios)
	slices.Sort(cpuRatios)
	b.ReportMetric(100*(ratios[len(ratios)/2]-1), "facts-overhead-%")
	b.ReportMetric(100*(cpuRatios[len(cpuRatios)/2]-1), "facts-cpu-overhead-%")
}

// BenchmarkFactsPerChunk measures what gathering the facts of one chunk
// (its start's and its end's) costs the chunk writer, without encoding.
func BenchmarkFactsPerChunk(b *testing.B) {
	sf := newSysFacts()
	events := 0
	count := func(string, ...jfr.Value) { events++ }
	all := func(string) bool { return true }
	for b.Loop() {
		sf.begin(0, DefaultEnvRedaction, all, count)
		sf.end(0, all, count)
	}
	b.ReportMetric(float64(events)/float64(b.N), "events/chunk")
}
