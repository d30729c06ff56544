package view

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/flightrec/flightrec/internal/jfrtool"
	"github.com/flightrec/flightrec/internal/mmapfile"
	"github.com/flightrec/flightrec/internal/testrec"
	"github.com/flightrec/flightrec/jfr"
)

// sample writes the JDK sample recording, uncompressed so it is mapped.
func sample(t *testing.T, name string) (string, []byte) {
	t.Helper()
	data := testrec.Bytes(t, name)
	path := filepath.Join(t.TempDir(), "rec.jfr")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// openSample indexes a sample recording (see sample); the index is closed
// when the test ends.
func openSample(t *testing.T, name string) (*Index, []byte) {
	t.Helper()
	path, data := sample(t, name)
	ix, err := Open([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix, data
}

// serveLocal serves a request from and to the loopback address.
func serveLocal(h http.Handler, method, url string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, url, nil)
	req.RemoteAddr, req.Host = "127.0.0.1:1", "localhost"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestIndexCounts compares the index's counts per type with what
// summary (the jfr tool's figures) counts, on a multi-chunk recording.
func TestIndexCounts(t *testing.T) {
	ix, data := openSample(t, "jdk17-sample-multichunk.jfr.gz")
	s, err := jfrtool.Summarize(jfr.NewBytesReader(data, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for _, ty := range s.Rows {
		want[ty.Name] = ty.Count
	}
	for _, ty := range ix.Types {
		if ty.Count != want[ty.Name] {
			t.Errorf("%s: %d events indexed, summary counts %d", ty.Name, ty.Count, want[ty.Name])
		}
	}
	if len(ix.Files[0].chunks) < 2 {
		t.Fatal("not a multi-chunk recording")
	}
	if m := ix.MemoryBytes(); m > int64(len(data)) {
		t.Errorf("index takes %d bytes for a %d-byte file", m, len(data))
	}
}

func TestFlameAndPage(t *testing.T) {
	ix, data := openSample(t, "jdk17-sample.jfr.gz")
	es := ix.Type("jdk.ExecutionSample")
	fl, err := ix.Flame(Filter{Types: []*Type{es}}, "", false)
	if err != nil {
		t.Fatal(err)
	}
	if fl.Total != es.Count || fl.Root.Total != es.Count {
		t.Errorf("flame total %d, want %d", fl.Total, es.Count)
	}
	// Top-down, the root's heaviest child is Thread.run; bottom-up the
	// heaviest leaf is ArrayList.grow (the hottest method).
	if n := fl.Names[fl.Root.Children[0].Name]; n != "java.lang.Thread.run" {
		t.Errorf("top-down root frame %s", n)
	}
	inv, err := ix.Flame(Filter{Types: []*Type{es}}, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if n := inv.Names[inv.Root.Children[0].Name]; n != "java.util.ArrayList.grow" || ix.Findings().HottestMethod != n {
		t.Errorf("bottom-up heaviest leaf %s, hottest method %s", n, ix.Findings().HottestMethod)
	}
	// Half the time range has fewer samples.
	half, _ := ix.Flame(Filter{Types: []*Type{es}, From: ix.Start, To: ix.Start + (ix.End-ix.Start)/2}, "", false)
	if half.Total <= 0 || half.Total >= fl.Total {
		t.Errorf("first half %d of %d samples", half.Total, fl.Total)
	}
	// Weighted by a field: allocation weights sum to the recording's.
	alloc := ix.Type("jdk.ObjectAllocationSample")
	w, err := ix.Flame(Filter{Types: []*Type{alloc}}, "weight", false)
	if err != nil || w.Unit != "bytes" || w.Total <= alloc.Count {
		t.Errorf("weighted flame: %v, unit %q, total %d", err, w.Unit, w.Total)
	}
	p, err := ix.Page(es, Filter{}, PageOptions{Limit: 10, Sort: "startTime", Desc: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Total != int(es.Count) || len(p.Rows) != 10 || p.Rows[0].Cells[0] < p.Rows[9].Cells[0] {
		t.Errorf("page: total %d, %d rows, first %v last %v", p.Total, len(p.Rows), p.Rows[0].Cells, p.Rows[9].Cells)
	}
	d, err := ix.Detail(p.Rows[0].ID)
	if err != nil || len(d.Stack) == 0 || d.Type != "jdk.ExecutionSample" {
		t.Fatalf("detail %+v, %v", d, err)
	}
	// The detail's offset is the record's in the file.
	r := jfr.NewBytesReader(data, nil)
	var ev jfr.Event
	found := false
	for r.ReadEvent(&ev) == nil {
		if ev.Offset == d.Offset {
			found = ev.Type.Name == d.Type
			break
		}
	}
	if !found {
		t.Errorf("no %s record at offset %d", d.Type, d.Offset)
	}
}

func TestLoopbackOnly(t *testing.T) {
	ix, _ := openSample(t, "jdk17-sample.jfr.gz")
	s := NewServer(ix, 0)
	for _, tc := range []struct {
		remote, host string
		code         int
	}{
		{"127.0.0.1:5000", "127.0.0.1:8080", 200},
		{"[::1]:5000", "localhost:8080", 200},
		{"127.0.0.1:5000", "[::1]:8080", 200},
		{"192.168.1.5:5000", "127.0.0.1:8080", 403},
		{"127.0.0.1:5000", "evil.example:8080", 421},
		{"127.0.0.1:5000", "127.0.0.1.nip.io", 421},
	} {
		req := httptest.NewRequest("GET", "/api/summary", nil)
		req.RemoteAddr, req.Host = tc.remote, tc.host
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != tc.code {
			t.Errorf("from %s for host %s: %d, want %d", tc.remote, tc.host, rec.Code, tc.code)
		}
		if tc.code == 200 {
			if csp := rec.Header().Get("Content-Security-Policy"); csp != contentSecurityPolicy {
				t.Errorf("CSP %q", csp)
			}
			var sum struct {
				Types []struct {
					Name  string
					Count int64
				}
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &sum); err != nil || len(sum.Types) != len(ix.Types) {
				t.Errorf("summary: %v, %d types", err, len(sum.Types))
			}
		}
	}
	rec := serveLocal(s, "POST", "/api/summary")
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}
}

func TestBadInput(t *testing.T) {
	path, data := sample(t, "jdk17-sample.jfr.gz")
	if err := os.WriteFile(path, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open([]string{path})
	if err == nil {
		t.Fatal("a truncated file opened")
	}
	if got := err.Error(); got[:len(path)] != path {
		t.Errorf("error %q does not name the file", got)
	}
}

func TestSummaryRange(t *testing.T) {
	ix, _ := openSample(t, "jdk17-sample.jfr.gz")
	s := NewServer(ix, 0)
	mid := (ix.Start + ix.End) / 2
	get := func(url string) map[string]int64 {
		rec := serveLocal(s, "GET", url)
		var sum struct {
			Types []struct {
				Name    string
				InRange *int64
			}
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &sum); err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, ty := range sum.Types {
			if ty.InRange != nil {
				out[ty.Name] = *ty.InRange
			}
		}
		return out
	}
	first := get("/api/summary?from=" + strconv.FormatInt(ix.Start, 10) + "&to=" + strconv.FormatInt(mid, 10))
	second := get("/api/summary?from=" + strconv.FormatInt(mid, 10))
	for _, ty := range ix.Types {
		if first[ty.Name]+second[ty.Name] != ty.Count {
			t.Errorf("%s: %d + %d in the two halves, %d in all", ty.Name, first[ty.Name], second[ty.Name], ty.Count)
		}
	}
	if len(get("/api/summary")) != 0 {
		t.Error("inRange without a range")
	}
}

func TestLanes(t *testing.T) {
	ix, _ := openSample(t, "jdk17-sample.jfr.gz")
	lanes := ix.Lanes(ix.Start, ix.End+1, 500)
	onThreads := 0
	for _, th := range ix.thread {
		if th != 0 {
			onThreads++
		}
	}
	n, spans := 0, 0
	for _, l := range lanes {
		n += l.Events
		for _, s := range l.Spans {
			if s[0] >= s[1] || s[1] > 500 || s[2] < 0 || s[2] >= len(ix.Types) {
				t.Fatalf("lane %s: bad span %v", l.Name, s)
			}
			spans++
		}
	}
	// Events that began before the first chunk's start are left out.
	if n > onThreads || n < onThreads*99/100 || len(lanes) != len(ix.Threads)-1 || spans == 0 {
		t.Errorf("%d lanes with %d events and %d spans; %d threads, %d events on threads", len(lanes), n, spans, len(ix.Threads)-1, onThreads)
	}
	// A narrower range holds fewer events.
	mid := (ix.Start + ix.End) / 2
	m := 0
	for _, l := range ix.Lanes(mid, ix.End+1, 500) {
		m += l.Events
	}
	if m <= 0 || m >= n {
		t.Errorf("second half: %d of %d events", m, n)
	}
}

// TestLoad: the counts shown while indexing are the index's, and the
// server answers from the index once it is ready.
func TestLoad(t *testing.T) {
	path, _ := sample(t, "jdk17-sample-multichunk.jfr.gz")
	s, err := Load([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	ix, _, err := s.Wait()
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	q := s.quick
	if !q.Indexing || len(q.Types) != len(ix.Types) || q.Events != int64(ix.Events) {
		t.Fatalf("quick summary: %d types, %d events; index: %d types, %d events", len(q.Types), q.Events, len(ix.Types), ix.Events)
	}
	for _, qt := range q.Types {
		if it := ix.Type(qt.Name); it == nil || it.Count != qt.Count || it.Bytes != qt.Bytes {
			t.Errorf("%s: quick %d events %d bytes, index %+v", qt.Name, qt.Count, qt.Bytes, it)
		}
	}
	rec := serveLocal(s, "GET", "/api/types")
	if rec.Code != 200 {
		t.Errorf("types after loading: %d %s", rec.Code, rec.Body)
	}
	if _, err := Load([]string{filepath.Join(t.TempDir(), "missing.jfr")}); err == nil {
		t.Error("a missing file loaded")
	}
}

// TestFileShrinksWhileSummarized: the counts shown while indexing are read
// on several goroutines; a mapped file cut underneath makes their reads
// fault, which must come back as an error naming the file, not crash the
// process (the chunk's metadata, near its start in this recording, is
// still there: the workers that count the records meet the cut).
func TestFileShrinksWhileSummarized(t *testing.T) {
	path, _ := sample(t, "jdk17-sample.jfr.gz")
	f, err := openFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	if f.close == nil {
		t.Skip("the recording is read into memory, not mapped, here")
	}
	if err := os.Truncate(path, 1<<20); err != nil {
		t.Fatal(err)
	}
	ix := &Index{Files: []*File{f}}
	err = mmapfile.Protect(func() error {
		_, err := summarize(ix)
		return err
	})
	if !errors.Is(err, mmapfile.ErrChanged) || !strings.HasPrefix(err.Error(), path+": ") {
		t.Fatalf("summary of a mapped file cut underneath: %v, want %v naming the file", err, mmapfile.ErrChanged)
	}
}

// TestOpenTruncatedGzip: a .jfr.gz cut short is an error naming the chunk
// and byte offset where its data ends, as the other commands' is; it was
// "unexpected EOF". Cut at a chunk's end, it is still an error.
func TestOpenTruncatedGzip(t *testing.T) {
	data := testrec.Bytes(t, "jdk17-sample-multichunk.jfr.gz")
	spans, err := jfr.ScanChunksAt(bytes.NewReader(data), int64(len(data)), nil)
	if err != nil {
		t.Fatal(err)
	}
	gz := func(b []byte) []byte {
		var out bytes.Buffer
		zw := gzip.NewWriter(&out)
		zw.Write(b)
		zw.Close()
		return out.Bytes()
	}
	whole := gz(data)
	atChunkEnd := gz(data[:spans[1].Offset])
	for _, c := range []struct {
		name string
		file []byte
		want *regexp.Regexp
	}{
		{"mid-chunk", whole[:len(whole)/2], regexp.MustCompile(`^\S+: chunk \d+, byte offset \d+: unexpected end of data \(truncated recording\)`)},
		{"chunk end", atChunkEnd[:len(atChunkEnd)-4], regexp.MustCompile(`^\S+: byte offset \d+ of the decompressed data: unexpected end of the compressed file \(truncated \.gz\)$`)},
	} {
		path := filepath.Join(t.TempDir(), "rec.jfr.gz")
		if err := os.WriteFile(path, c.file, 0o644); err != nil {
			t.Fatal(err)
		}
		ix, err := Open([]string{path})
		if err == nil {
			ix.Close()
		}
		if err == nil || !c.want.MatchString(err.Error()) {
			t.Errorf("%s: Open: %v; want %s", c.name, err, c.want)
		}
	}
}
