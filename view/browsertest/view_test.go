package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/flightrec/flightrec/view"
)

// browser returns the path of a Chromium, or skips the test.
func browser(t *testing.T) string {
	for _, p := range []string{"chromium-headless-shell", "chromium", "google-chrome", "headless-shell"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Skip("no Chromium found (Debian: apt-get install chromium-headless-shell)")
	return ""
}

// repo returns the repository's root.
func repo() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// session is a browser tab on a view server, with the console messages
// the page wrote.
type session struct {
	t    *testing.T
	ctx  context.Context
	url  string
	ix   *view.Index
	mu   sync.Mutex
	msgs []chromedp.ConsoleMessage
}

func newSession(t *testing.T, files ...string) *session {
	t.Helper()
	browser(t)
	start := time.Now()
	ix, err := view.Open(files)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return serve(t, view.NewServer(ix, time.Since(start)), ix)
}

// serve starts a browser on a test server of srv.
func serve(t *testing.T, h *view.Server, ix *view.Index) *session {
	t.Helper()
	exe := browser(t)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.WindowSize(1400, 900))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel3)
	s := &session{t: t, ctx: ctx, url: srv.URL, ix: ix}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			s.mu.Lock()
			s.msgs = append(s.msgs, m)
			s.mu.Unlock()
		}
	}()
	return s
}

// open shows a page and waits until it has rendered its data.
func (s *session) open(hash, page string) {
	s.t.Helper()
	if err := chromedp.Do(s.ctx, chromedp.Navigate(s.url+"/#"+hash)); err != nil {
		s.t.Fatal(err)
	}
	s.waitReady(page)
}

func (s *session) waitReady(page string) {
	s.t.Helper()
	_, err := chromedp.Run(s.ctx, chromedp.Poll[bool](fmt.Sprintf("document.body.dataset.ready === %q", page), chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil {
		got, _ := chromedp.Run(s.ctx, chromedp.Evaluate[string](`document.body.dataset.ready + ': ' + document.querySelector('main').innerText.slice(0, 300)`))
		s.t.Fatalf("page %s did not render: %v (%s)", page, err, got)
	}
}

func eval[T any](s *session, js string) T {
	s.t.Helper()
	v, err := chromedp.Run(s.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		s.t.Fatalf("%s: %v", js, err)
	}
	return v
}

// check asserts what every page must: no console error or exception,
// every resource loaded from the server itself, a non-blank screenshot.
func (s *session) check(name string) {
	s.t.Helper()
	time.Sleep(100 * time.Millisecond) // let late console messages arrive
	s.mu.Lock()
	for _, m := range s.msgs {
		if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException || m.Type == chromedp.ConsoleWarning {
			s.t.Errorf("%s: console %s", name, m)
		}
	}
	s.msgs = nil
	s.mu.Unlock()
	for _, u := range eval[[]string](s, `performance.getEntriesByType('resource').map(e => e.name).concat([location.href])`) {
		if !strings.HasPrefix(u, s.url+"/") {
			s.t.Errorf("%s: request outside the server: %s", name, u)
		}
	}
	shot, err := chromedp.Run(s.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		s.t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		s.t.Fatal(err)
	}
	if share := inked(img); share < 0.02 {
		s.t.Errorf("%s: screenshot nearly blank (%.3f of the pixels drawn)", name, share)
	}
	if dir := os.Getenv("FLIGHTREC_SCREENSHOTS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "view-"+name+".png"), shot, 0o644); err != nil {
			s.t.Fatal(err)
		}
	}
}

// inked returns the share of sampled pixels that are not the background.
func inked(img image.Image) float64 {
	b := img.Bounds()
	n, ink := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, _ := img.At(x, y).RGBA()
			n++
			if r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				ink++
			}
		}
	}
	return float64(ink) / float64(n)
}

func (s *session) mouse(typ input.DispatchMouseEventType, x, y float64) {
	s.t.Helper()
	opts := []chromedp.MouseOption{chromedp.ButtonLeft}
	if typ == input.DispatchMouseEventTypeMouseMoved {
		opts = nil
	}
	if err := chromedp.Do(s.ctx, chromedp.MouseEvent(typ, x, y, opts...)); err != nil {
		s.t.Fatal(err)
	}
}

func jdkSample(t *testing.T) string {
	return filepath.Join(repo(), "jfr", "testdata", "jdk17-sample.jfr.gz")
}

func TestPagesJDK(t *testing.T) {
	s := newSession(t, jdkSample(t))
	ix := s.ix

	s.open("overview", "overview")
	if got := eval[int](s, `document.querySelectorAll('#types tr[data-type]').length`); got != len(ix.Types) {
		t.Errorf("overview lists %d types, the index has %d", got, len(ix.Types))
	}
	if got := eval[string](s, `document.querySelector('#types tr[data-type="jdk.ExecutionSample"] td:nth-child(2)').textContent.replaceAll(',', '')`); got != fmt.Sprintf("%d", ix.Type("jdk.ExecutionSample").Count) {
		t.Errorf("jdk.ExecutionSample count shown %q, want %d", got, ix.Type("jdk.ExecutionSample").Count)
	}
	if got := eval[string](s, `document.querySelector('#findings').textContent`); !strings.Contains(got, "java.util.ArrayList.grow") {
		t.Errorf("findings lack the hottest method: %s", got)
	}
	s.check("overview")

	s.open("flame?types=jdk.ExecutionSample", "flame")
	total := eval[string](s, `document.querySelector('#flame').dataset.total`)
	if want := fmt.Sprint(ix.Type("jdk.ExecutionSample").Count); total != want {
		t.Errorf("flame total %s, want the %s samples", total, want)
	}
	if n := eval[int](s, `+document.querySelector('#flame').dataset.nodes`); n < 10 {
		t.Errorf("flame graph drew %d frames", n)
	}
	// Hover the second row (the root frame of every Java thread).
	rect := eval[[]float64](s, `(r => [r.left, r.top, r.width])(document.querySelector('#flame').getBoundingClientRect())`)
	s.mouse(input.DispatchMouseEventTypeMouseMoved, rect[0]+rect[2]/2, rect[1]+17*1.5)
	if tip := eval[string](s, `document.querySelector('#tip').hidden ? '' : document.querySelector('#tip').textContent`); !strings.Contains(tip, "java.lang.Thread.run") {
		t.Errorf("hovering the root frame shows %q", tip)
	}
	// Search highlights and measures matches; a click zooms; bottom-up
	// puts the hottest leaf under the root.
	eval[bool](s, `(i => { i.value = 'ArrayList.grow'; i.dispatchEvent(new Event('input')); return true })(document.querySelector('#flame-search'))`)
	if info := eval[string](s, `document.querySelector('#flame-info').textContent`); !strings.Contains(info, `"ArrayList.grow" matches`) {
		t.Errorf("search: %q", info)
	}
	flameRect := `(r => [r.left, r.top, r.width])(document.querySelector('#flame').getBoundingClientRect())`
	rect = eval[[]float64](s, flameRect) // the longer info line may have moved it
	if err := chromedp.Do(s.ctx, chromedp.MouseClickXY(rect[0]+rect[2]/2, rect[1]+17*1.5)); err != nil {
		t.Fatal(err)
	}
	if info := eval[string](s, `document.querySelector('#flame-info').textContent`); !strings.Contains(info, "zoomed") {
		t.Errorf("click did not zoom: %q", info)
	}
	s.check("flame")
	eval[bool](s, `document.body.dataset.ready = ''; document.querySelector('#flame-invert').click(); true`)
	s.waitReady("flame")
	rect = eval[[]float64](s, flameRect)
	s.mouse(input.DispatchMouseEventTypeMouseMoved, rect[0]+5, rect[1]+17*1.5)
	if tip := eval[string](s, `document.querySelector('#tip').textContent`); !strings.HasPrefix(tip, "java.util.ArrayList.grow") {
		t.Errorf("bottom-up: the first leaf is %q", tip)
	}

	s.open("timeline", "timeline")
	if n := eval[int](s, `+document.querySelector('#timeline').dataset.lanes`); n < 5 {
		t.Errorf("timeline has %d lanes", n)
	}
	s.check("timeline")
	// Brush the middle fifth of the range: the flame graph then weighs
	// only the samples in it.
	rect = eval[[]float64](s, `(r => [r.left, r.top, r.width])(document.querySelector('#timeline').getBoundingClientRect())`)
	x0, x1, y := rect[0]+180+(rect[2]-180)*0.4, rect[0]+180+(rect[2]-180)*0.6, rect[1]+100
	s.mouse(input.DispatchMouseEventTypeMousePressed, x0, y)
	s.mouse(input.DispatchMouseEventTypeMouseMoved, x1, y)
	s.mouse(input.DispatchMouseEventTypeMouseReleased, x1, y)
	if _, err := chromedp.Run(s.ctx, chromedp.Poll[bool](`document.querySelector('#nav-flame').getAttribute('href').includes('from=')`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("brushing did not set a range: %v", err)
	}
	s.waitReady("timeline")
	if h := eval[string](s, `location.hash`); !strings.Contains(h, "from=") || !strings.Contains(h, "to=") {
		t.Fatalf("brushing did not set a range: %s", h)
	}
	if err := chromedp.Do(s.ctx, chromedp.Click("#nav-flame")); err != nil {
		t.Fatal(err)
	}
	s.waitReady("flame")
	if h := eval[string](s, `location.hash`); !strings.Contains(h, "from=") {
		t.Fatalf("the range did not carry over to the flame graph: %s", h)
	}
	eval[bool](s, `document.body.dataset.ready = ''; location.hash += '&types=jdk.ExecutionSample'; true`)
	s.waitReady("flame")
	from := eval[int64](s, `+new URLSearchParams(location.hash.split('?')[1]).get('from')`)
	to := eval[int64](s, `+new URLSearchParams(location.hash.split('?')[1]).get('to')`)
	want, err := ix.Flame(view.Filter{Types: []*view.Type{ix.Type("jdk.ExecutionSample")}, From: from, To: to}, "", false)
	if err != nil {
		t.Fatal(err)
	}
	brushed := eval[int64](s, `+document.querySelector('#flame').dataset.total`)
	if all := ix.Type("jdk.ExecutionSample").Count; brushed != want.Total || brushed <= 0 || brushed >= all {
		t.Errorf("flame total in the brushed range %d, want %d (of %d in all)", brushed, want.Total, all)
	}
	if r := eval[string](s, `document.querySelector('#range').textContent`); !strings.Contains(r, "Range") {
		t.Errorf("the range is not shown: %q", r)
	}
	// The Overview counts the events in the range too.
	eval[bool](s, `document.body.dataset.ready = ''; document.querySelector('#nav-overview').click(); true`)
	s.waitReady("overview")
	inRange := eval[string](s, `document.querySelector('#types tr[data-type="jdk.ExecutionSample"] td.in-range').textContent.replaceAll(',', '')`)
	if inRange != fmt.Sprint(want.Events) {
		t.Errorf("overview shows %s samples in the range, the flame graph %d", inRange, want.Events)
	}

	s.open("events?types=jdk.ExecutionSample", "events")
	if n := eval[int](s, `document.querySelectorAll('#event-table tr.row').length`); n != 100 {
		t.Errorf("event table shows %d rows, want a page of 100", n)
	}
	// Sorting by start time, descending, from the column header.
	for range 2 {
		eval[bool](s, `document.body.dataset.ready = ''; document.querySelector('#event-table th').click(); true`)
		s.waitReady("events")
	}
	times := eval[[]string](s, `[...document.querySelectorAll('#event-table tr.row')].slice(0, 2).map(r => r.cells[0].textContent)`)
	if len(times) != 2 || times[0] < times[1] || !strings.Contains(eval[string](s, `location.hash`), "desc=1") {
		t.Errorf("descending sort: first rows %v", times)
	}
	eval[bool](s, `document.querySelector('#event-table tr.row').dispatchEvent(new MouseEvent('click', {bubbles: true}))`)
	stack, err := chromedp.Run(s.ctx, chromedp.Poll[string](`document.querySelector('#detail-stack') && document.querySelector('#detail-stack').textContent`, chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil || !strings.Contains(stack, "java.") {
		t.Errorf("detail stack %q, %v", stack, err)
	}
	s.check("events")
}

func TestPagesGoAndFlow(t *testing.T) {
	browser(t)
	dir := t.TempDir()
	exe := filepath.Join(dir, "flightrec")
	build := exec.Command("go", "build", "-o", exe, "./cmd/flightrec")
	build.Dir = repo()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(exe, "demo", "--duration", "2s", "--requests", "5")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("flightrec demo: %v\n%s", err, out)
	}
	s := newSession(t, filepath.Join(dir, "demo.jfr"))
	s.open("flame", "flame")
	// CPU samples first, Go frames by their full names.
	if sel := eval[string](s, `[...document.querySelector('#flame-types').selectedOptions].map(o => o.value).join()`); sel != "jdk.ExecutionSample" {
		t.Errorf("flame graph shows %q first", sel)
	}
	if total := eval[int64](s, `+document.querySelector('#flame').dataset.total`); total != s.ix.Type("jdk.ExecutionSample").Count {
		t.Errorf("flame total %d, want %d samples", total, s.ix.Type("jdk.ExecutionSample").Count)
	}
	s.check("flame-go")
	s.open("timeline", "timeline")
	if n := eval[int](s, `+document.querySelector('#timeline').dataset.lanes`); n < 3 {
		t.Errorf("Go timeline: %d lanes", n)
	}
	// CPU load, heap and goroutine counters from the recorder's runtime events.
	if n := eval[int](s, `+document.querySelector('#timeline').dataset.counters`); n < 3 {
		t.Errorf("Go timeline: %d counters", n)
	}
	s.check("timeline-go")
	s.open("overview", "overview")
	// The note that CPU samples sit on one synthetic thread shows when
	// they all do; the demo records with the execution tracer, which puts
	// them on their goroutines (view's TestGoCPUOneThreadFinding covers
	// both cases).
	got := eval[string](s, `document.querySelector('#findings').textContent`)
	if want := s.ix.Findings().GoCPUOneThread; strings.Contains(got, "one synthetic thread") != want {
		t.Errorf("note about Go CPU samples on one thread shown: %v, want %v: %s", !want, want, got)
	}
	s.check("overview-go")

	f := newSession(t, filepath.Join(dir, "node-A.jfr"), filepath.Join(dir, "node-B.jfr"), filepath.Join(dir, "node-C.jfr"))
	f.open("flow", "flow")
	if n := eval[int](f, `document.querySelectorAll('#traces tr.row').length`); n == 0 {
		t.Fatal("no traces listed")
	}
	if n := eval[int](f, `+document.querySelector('#sequence-svg').dataset.arrows`); n == 0 {
		t.Error("the sequence diagram has no message arrow")
	}
	f.check("flow")
}

func TestRefusesForeignHost(t *testing.T) {
	ix, err := view.Open([]string{jdkSample(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	srv := httptest.NewServer(view.NewServer(ix, 0))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/api/summary", nil)
	req.Host = "attacker.example:80"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 421 {
		t.Errorf("a request for another host got %d", resp.StatusCode)
	}
}

// TestFirstPaintBig measures, on the large recording named by
// FLIGHTREC_BIG (bench/compare.sh builds one), the time from the start of
// indexing to the Overview drawn with data, and each page's first paint
// and API replies as the browser saw them. It logs; it does not fail on
// the timings, which depend on the machine.
func TestFirstPaintBig(t *testing.T) {
	big := os.Getenv("FLIGHTREC_BIG")
	if big == "" {
		t.Skip("FLIGHTREC_BIG is not set")
	}
	start := time.Now()
	srv, err := view.Load([]string{big})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("files opened and counted %v after the start", time.Since(start).Round(time.Millisecond))
	s := serve(t, srv, nil)
	if err := chromedp.Do(s.ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	t.Logf("browser started %v after the start", time.Since(start).Round(time.Millisecond))
	// The Overview first shows the counts read from the record headers,
	// then everything once the index is ready.
	s.open("overview", "overview-quick")
	t.Logf("overview with counts drawn %v after the start", time.Since(start).Round(time.Millisecond))
	if n := eval[int](s, `document.querySelectorAll('#types tr[data-type]').length`); n < 10 {
		t.Errorf("the first overview lists %d types", n)
	}
	s.check("overview-quick-big")
	s.waitReady("overview")
	ix, took, err := srv.Wait()
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	t.Logf("index ready %v after the start, full overview drawn %v after the start", took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	for _, p := range []string{"flame", "timeline", "events"} {
		t0 := time.Now()
		s.open(p, p)
		t.Logf("%s drawn in %v", p, time.Since(t0).Round(time.Millisecond))
		for _, e := range eval[[]string](s, `performance.getEntriesByType('resource').filter(e => e.name.includes('/api/')).map(e => e.name.replace(location.origin, '') + ' ' + Math.round(e.duration) + ' ms')`) {
			t.Log("  ", e)
		}
		s.check(p + "-big")
		eval[bool](s, `performance.clearResourceTimings(); true`)
	}
}
