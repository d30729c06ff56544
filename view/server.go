package view

import (
	"compress/gzip"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flightrec/flightrec/analysis/flow"
)

//go:embed static
var static embed.FS

// contentSecurityPolicy keeps the page to its own origin: no inline
// scripts, no other hosts, no frames.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Server serves an index over HTTP.
type Server struct {
	// ix, indexTime and err are set before ready is closed.
	ix        *Index
	indexTime time.Duration
	err       error
	ready     chan struct{}
	quick     *quickSummary // what the Overview shows while indexing
	mux       *http.ServeMux
	flowOnce  sync.Once
	flow      *flowData
}

// NewServer returns the handler of the view of an index; indexTime is
// shown on the Overview.
func NewServer(ix *Index, indexTime time.Duration) *Server {
	s := newServer()
	s.ix, s.indexTime = ix, indexTime
	close(s.ready)
	go ix.byThread() // the timeline's lists, before the first request needs them
	return s
}

// Load opens the files, counts their records by type (reading only the
// record headers, which takes milliseconds) and returns a server at once;
// the index is built in the background. Until it is ready /api/summary
// answers with those counts and "indexing": true, and the other
// endpoints wait for it. Wait returns the index when it is ready.
func Load(names []string) (*Server, error) {
	start := time.Now()
	ix, err := openFiles(names)
	if err != nil {
		return nil, err
	}
	q, err := summarize(ix)
	if err != nil {
		ix.Close()
		return nil, err
	}
	s := newServer()
	s.quick = q
	go func() {
		err := ix.build()
		if err != nil {
			ix.Close()
			s.err = err
		} else {
			s.ix, s.indexTime = ix, time.Since(start)
			go ix.byThread()
		}
		close(s.ready)
	}()
	return s, nil
}

// Wait waits for the index and returns it, with the time from Load.
func (s *Server) Wait() (*Index, time.Duration, error) {
	<-s.ready
	return s.ix, s.indexTime, s.err
}

func newServer() *Server {
	s := &Server{ready: make(chan struct{}), mux: http.NewServeMux()}
	sub, _ := fs.Sub(static, "static")
	s.mux.Handle("GET /", http.FileServerFS(sub))
	s.api("GET /api/summary", s.summary)
	s.api("GET /api/types", s.types)
	s.api("GET /api/threads", s.threads)
	s.api("GET /api/flame", s.flame)
	s.api("GET /api/lanes", s.lanesAPI)
	s.api("GET /api/events", s.events)
	s.api("GET /api/event", s.event)
	s.api("GET /api/flow/traces", s.flowTraces)
	s.api("GET /api/flow/trace", s.flowTrace)
	return s
}

// ServeHTTP refuses clients that are not on this machine and requests
// addressed to a host name that is not a loopback one (DNS rebinding),
// then serves with security headers.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !loopbackAddr(r.RemoteAddr) {
		http.Error(w, "flightrec view answers only clients on this machine", http.StatusForbidden)
		return
	}
	if !loopbackHost(r.Host) {
		http.Error(w, "flightrec view answers only requests for localhost, 127.0.0.1 or [::1]", http.StatusMisdirectedRequest)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "read-only", http.StatusMethodNotAllowed)
		return
	}
	s.mux.ServeHTTP(w, r)
}

func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// api registers a JSON endpoint. A memory fault (a file shrank) or any
// error becomes a JSON error reply.
func (s *Server) api(pattern string, fn func(r *http.Request) (any, error)) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if pattern != "GET /api/summary" {
			select {
			case <-s.ready:
			case <-r.Context().Done():
				return
			}
		}
		var v any
		err := s.err
		if err == nil {
			v, err = s.call(fn, r)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if err != nil {
			code := http.StatusInternalServerError
			var be badRequest
			if errors.As(err, &be) {
				code = http.StatusBadRequest
			}
			w.WriteHeader(code)
			json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		var out io.Writer = w
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
			defer zw.Close()
			out = zw
		}
		json.NewEncoder(out).Encode(v)
	})
}

func (s *Server) call(fn func(r *http.Request) (any, error), r *http.Request) (v any, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error: %v", p)
		}
	}()
	return fn(r)
}

type badRequest struct{ msg string }

func (b badRequest) Error() string { return b.msg }

func badf(format string, args ...any) error { return badRequest{fmt.Sprintf(format, args...)} }

// params reads the common query parameters.
func (s *Server) filter(r *http.Request) (Filter, error) {
	q := r.URL.Query()
	var f Filter
	var err error
	if f.From, err = intParam(q.Get("from")); err != nil {
		return f, err
	}
	if f.To, err = intParam(q.Get("to")); err != nil {
		return f, err
	}
	th, err := intParam(q.Get("thread"))
	if err != nil || th < 0 || th >= int64(len(s.ix.Threads)) {
		return f, badf("bad thread %q", q.Get("thread"))
	}
	f.Thread = uint32(th)
	if ts := q.Get("types"); ts != "" {
		for _, name := range strings.Split(ts, ",") {
			t := s.ix.Type(name)
			if t == nil {
				return f, badf("no event type %q", name)
			}
			f.Types = append(f.Types, t)
		}
	}
	return f, nil
}

func intParam(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, badf("bad number %q", s)
	}
	return n, nil
}

// summaryType is a type as /api/summary lists it.
type summaryType struct {
	Name     string   `json:"name"`
	Label    string   `json:"label,omitempty"`
	Category []string `json:"category,omitempty"`
	Count    int64    `json:"count"`
	Bytes    int64    `json:"bytes"`
	PerFile  []int64  `json:"perFile"`
	Stack    bool     `json:"stack,omitempty"`
	Timed    bool     `json:"timed,omitempty"`
	Hist     []int64  `json:"hist"`
	InRange  *int64   `json:"inRange,omitempty"` // events in [from, to) when asked
}

func (s *Server) summary(r *http.Request) (any, error) {
	select {
	case <-s.ready:
	default:
		return s.quick, nil
	}
	ix := s.ix
	f, err := s.filter(r)
	if err != nil {
		return nil, err
	}
	ranged := f.From != 0 || f.To != 0
	type file struct {
		Name   string `json:"name"`
		Size   int64  `json:"size"`
		Start  int64  `json:"start"`
		End    int64  `json:"end"`
		Chunks int    `json:"chunks"`
	}
	var files []file
	for _, f := range ix.Files {
		files = append(files, file{f.Name, f.Size, f.Start, f.End, len(f.chunks)})
	}
	var types []summaryType
	for _, t := range ix.Types {
		st := summaryType{t.Name, t.Label, t.Category, t.Count, t.Bytes, t.PerFile, t.Stack, t.Timed, downsample(t.Hist, 64), nil}
		if ranged {
			n := int64(ix.countIn(t, f.From, f.To))
			st.InRange = &n
		}
		types = append(types, st)
	}
	return map[string]any{
		"files": files, "types": types, "start": ix.Start, "end": ix.End, "events": ix.Events,
		"threads": len(ix.Threads) - 1, "stacks": ix.Stacks.Len() - 1, "findings": ix.Findings(),
		"indexMillis": s.indexTime.Milliseconds(), "indexBytes": ix.MemoryBytes(),
	}, nil
}

func downsample(h []int64, n int) []int64 {
	out := make([]int64, n)
	for i, v := range h {
		out[i*n/len(h)] += v
	}
	return out
}

func (s *Server) types(r *http.Request) (any, error) {
	type typ struct {
		Name     string      `json:"name"`
		Label    string      `json:"label,omitempty"`
		Category []string    `json:"category,omitempty"`
		Count    int64       `json:"count"`
		Stack    bool        `json:"stack,omitempty"`
		Timed    bool        `json:"timed,omitempty"`
		Fields   []FieldInfo `json:"fields"`
	}
	var out []typ
	for _, t := range s.ix.Types {
		out = append(out, typ{t.Name, t.Label, t.Category, t.Count, t.Stack, t.Timed, t.Fields})
	}
	return out, nil
}

func (s *Server) threads(r *http.Request) (any, error) {
	return s.ix.Threads, nil
}

func (s *Server) flame(r *http.Request) (any, error) {
	f, err := s.filter(r)
	if err != nil {
		return nil, err
	}
	if len(f.Types) == 0 {
		if t := s.ix.DefaultFlameType(); t != nil {
			f.Types = append(f.Types, t)
		}
	}
	start := time.Now()
	fl, err := s.ix.Flame(f, r.URL.Query().Get("weight"), r.URL.Query().Get("invert") == "1")
	if errors.Is(err, errWeight) {
		return nil, badf("%v: %s", err, r.URL.Query().Get("weight"))
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"flame": fl, "millis": time.Since(start).Milliseconds()}, nil
}

func (s *Server) lanesAPI(r *http.Request) (any, error) {
	f, err := s.filter(r)
	if err != nil {
		return nil, err
	}
	from, to := f.From, f.To
	if from == 0 {
		from = s.ix.Start
	}
	if to == 0 {
		to = s.ix.End
	}
	px, _ := intParam(r.URL.Query().Get("px"))
	var names []string
	for _, t := range s.ix.Types {
		names = append(names, t.Name)
	}
	return map[string]any{"from": from, "to": to, "types": names,
		"lanes": s.ix.Lanes(from, to, int(px)), "counters": s.ix.Counters(from, to, int(px))}, nil
}

// maxScan bounds the events decoded for one sorted or searched page.
const maxScan = 1 << 20

func (s *Server) events(r *http.Request) (any, error) {
	f, err := s.filter(r)
	if err != nil {
		return nil, err
	}
	if len(f.Types) != 1 {
		return nil, badf("give one event type: types=NAME")
	}
	q := r.URL.Query()
	offset, _ := intParam(q.Get("offset"))
	limit, _ := intParam(q.Get("limit"))
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	return s.ix.Page(f.Types[0], f, PageOptions{Offset: int(offset), Limit: int(limit), Sort: q.Get("sort"), Desc: q.Get("desc") == "1", Search: q.Get("q")})
}

func (s *Server) event(r *http.Request) (any, error) {
	id, err := intParam(r.URL.Query().Get("id"))
	if err != nil || id < 0 || id >= int64(s.ix.Events) {
		return nil, badf("bad event id %q", r.URL.Query().Get("id"))
	}
	return s.ix.Detail(int32(id))
}

// flowData is the merged flow of the recordings, made on first request.
type flowData struct {
	Nodes   []string         `json:"nodes"`
	Offsets []int64          `json:"offsets"`
	Traces  []flow.JSONTrace `json:"-"`
	Total   int              `json:"total"`
	Err     string           `json:"error,omitempty"`
}

// maxTraces bounds the traces kept for the Flow page.
const maxTraces = 2000

func (s *Server) flowMerged() *flowData {
	s.flowOnce.Do(func() {
		fd := &flowData{}
		has := false
		for _, t := range s.ix.Types {
			has = has || strings.HasPrefix(t.Name, "flightrec.flow.")
		}
		if has {
			var inputs []flow.Input
			for _, f := range s.ix.Files {
				inputs = append(inputs, flow.Input{Name: f.Name, Size: f.Size, Open: func() (io.ReadCloser, error) {
					return io.NopCloser(f.reader()), nil
				}})
			}
			m, err := flow.Merge(inputs, nil, func(t *flow.Trace) error {
				fd.Total++
				if len(fd.Traces) < maxTraces {
					fd.Traces = append(fd.Traces, t.JSON())
				}
				return nil
			})
			if err == nil && len(m.Errors) > 0 {
				err = m.Errors[0]
			}
			if err != nil {
				fd.Err = err.Error()
			}
			fd.Nodes, fd.Offsets = m.Nodes, m.Offsets
		}
		s.flow = fd
	})
	return s.flow
}

func (s *Server) flowTraces(r *http.Request) (any, error) {
	fd := s.flowMerged()
	type row struct {
		Index      int      `json:"index"`
		Tag        string   `json:"tag,omitempty"`
		Events     int      `json:"events"`
		Nodes      []string `json:"nodes"`
		Start      int64    `json:"start"`
		Duration   int64    `json:"duration"`
		Incomplete bool     `json:"incomplete,omitempty"`
	}
	rows := []row{}
	for i, t := range fd.Traces {
		rw := row{Index: i, Tag: t.Tag, Events: len(t.Events), Incomplete: t.Incomplete}
		seen := map[string]bool{}
		for j, e := range t.Events {
			if !seen[e.Node] {
				seen[e.Node] = true
				rw.Nodes = append(rw.Nodes, e.Node)
			}
			if j == 0 {
				rw.Start = e.WallNs
			}
			rw.Duration = max(rw.Duration, e.WallNs-rw.Start)
		}
		rows = append(rows, rw)
	}
	return map[string]any{"merge": fd, "traces": rows}, nil
}

func (s *Server) flowTrace(r *http.Request) (any, error) {
	fd := s.flowMerged()
	i, err := intParam(r.URL.Query().Get("i"))
	if err != nil || i < 0 || i >= int64(len(fd.Traces)) {
		return nil, badf("no trace %q", r.URL.Query().Get("i"))
	}
	return fd.Traces[i], nil
}
