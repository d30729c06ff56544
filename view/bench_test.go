package view

import (
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/jfr"
)

// bigRecording is the large JDK recording the goals are measured on
// (bench/compare.sh builds it, about 190 MB); the benchmarks use the JDK
// sample when FLIGHTREC_BIG is not set.
func bigRecording(b *testing.B) string {
	if p := os.Getenv("FLIGHTREC_BIG"); p != "" {
		return p
	}
	path, _ := sample(&testing.T{}, "jdk17-sample.jfr.gz")
	return path
}

// BenchmarkIndex opens and indexes the recording; it reports the index's
// live heap per byte of the file (goal <= 1).
func BenchmarkIndex(b *testing.B) {
	path := bigRecording(b)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	var heap float64
	cpu0 := cpuTime()
	for b.Loop() {
		ix, err := Open([]string{path})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = float64(ms.HeapAlloc)
		runtime.KeepAlive(ix)
		ix.Close()
		b.StartTimer()
	}
	b.ReportMetric(heap/float64(st.Size()), "heap/file-byte")
	b.ReportMetric(float64(st.Size())/1e6, "file-MB")
	// CPU time (all threads) per index: on a shared machine the wall time
	// depends on the other load; this does not (the GCs between runs
	// count a little).
	b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
}

// BenchmarkPeerDecode decodes every event of the recording on one
// goroutine with package jfr, as `flightrec print` does: the work any full
// index does at least.
func BenchmarkPeerDecode(b *testing.B) {
	path := bigRecording(b)
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	cpu0 := cpuTime()
	for b.Loop() {
		r := jfr.NewBytesReader(data, nil)
		var ev jfr.Event
		for {
			err := r.ReadEvent(&ev)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
}

// BenchmarkPeerJDKLoad runs the JDK's own load of the recording
// (testdata/LoadAll.java: RecordingFile.readAllEvents) and reports its
// load time and heap after GC per byte of the file. It is skipped without
// java on the PATH.
func BenchmarkPeerJDKLoad(b *testing.B) {
	java, err := exec.LookPath("java")
	if err != nil {
		b.Skip("no java on the PATH")
	}
	path := bigRecording(b)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	var load, heap float64
	for b.Loop() {
		out, err := exec.Command(java, "-Xmx8g", "testdata/LoadAll.java", path).Output()
		if err != nil {
			b.Fatal(err)
		}
		f := strings.Fields(string(out))
		if len(f) != 3 {
			b.Fatalf("LoadAll printed %q", out)
		}
		l, _ := strconv.ParseFloat(f[1], 64)
		h, _ := strconv.ParseFloat(f[2], 64)
		load, heap = l, h
	}
	b.ReportMetric(load, "load-ns")
	b.ReportMetric(heap/float64(st.Size()), "heap/file-byte")
}

// BenchmarkAPI times the replies of the API the pages call, from the
// index built once.
func BenchmarkAPI(b *testing.B) {
	path := bigRecording(b)
	ix, err := Open([]string{path})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	s := NewServer(ix, 0)
	// The most frequent stack-carrying type, for the flame graph.
	var st *Type
	for _, t := range ix.Types {
		if t.Stack && (st == nil || t.Count > st.Count) {
			st = t
		}
	}
	mid := (ix.Start + ix.End) / 2
	quarter := (ix.End - ix.Start) / 4
	from, to := itoa(mid-quarter), itoa(mid+quarter)
	for _, c := range []struct{ name, url string }{
		{"summary", "/api/summary"},
		{"types", "/api/types"},
		{"lanes", "/api/lanes?px=1200"},
		{"lanes-range", "/api/lanes?px=1200&from=" + from + "&to=" + to},
		{"events-page", "/api/events?types=" + st.Name + "&limit=100&offset=1000"},
		{"flame", "/api/flame?types=" + st.Name},
		{"flame-range", "/api/flame?types=" + st.Name + "&from=" + from + "&to=" + to},
	} {
		b.Run(c.name, func(b *testing.B) {
			var n int
			for b.Loop() {
				req := httptest.NewRequest("GET", c.url, nil)
				req.RemoteAddr, req.Host = "127.0.0.1:1", "127.0.0.1"
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("%s: %d %s", c.url, rec.Code, rec.Body)
				}
				n = rec.Body.Len()
			}
			b.ReportMetric(float64(n), "reply-bytes")
		})
	}
	b.Logf("flame type %s: %d events", st.Name, st.Count)
}

// BenchmarkFlameRange aggregates the flame graph of the most frequent
// stack-carrying type over the middle half of the recording (goal: 1 M
// samples in < 300 ms).
func BenchmarkFlameRange(b *testing.B) {
	ix, err := Open([]string{bigRecording(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	var st *Type
	for _, t := range ix.Types {
		if t.Stack && (st == nil || t.Count > st.Count) {
			st = t
		}
	}
	mid, quarter := (ix.Start+ix.End)/2, (ix.End-ix.Start)/4
	var fl *Flame
	for b.Loop() {
		fl, err = ix.Flame(Filter{Types: []*Type{st}, From: mid - quarter, To: mid + quarter}, "", false)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(st.Count), "samples")
	b.ReportMetric(float64(fl.Events), "in-range")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
