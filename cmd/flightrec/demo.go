package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/flightrec/flightrec/jdkio"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/internal/cli"
	"github.com/flightrec/flightrec/internal/jfrtool"
	"github.com/flightrec/flightrec/recorder"
)

// demoRequest is the demo workload's custom event.
type demoRequest struct {
	event.Timed
	Method string `label:"Method"`
	Path   string `label:"Path"`
	Status int32  `label:"Status Code"`
	Bytes  int64  `label:"Response Size" content:"bytes"`
	Worker int32  `label:"Worker"`
}

type demoLockWait struct {
	event.Timed
	Lock string `label:"Lock"`
}

var (
	demoRequestEvent = event.Define[demoRequest](event.Info{Name: "demo.HTTPRequest", Label: "HTTP Request",
		Description: "A request served by the demo workload", Category: []string{"Demo", "HTTP"}, StackTrace: true})
	demoLockEvent = event.Define[demoLockWait](event.Info{Name: "demo.LockWait", Label: "Lock Wait",
		Description: "Time spent waiting for the shared cache lock", Category: []string{"Demo", "Locks"}})
)

var demoCmd = &cli.Command{
	Name:      "demo",
	UsageLine: "demo [--duration D] [--out FILE] [--settings default|profile] [--cluster=false] [--requests N]",
	Short:     "record a built-in instrumented workload to demo.jfr",
	Long: `
Demo runs a small instrumented Go workload (goroutines serving HTTP-like
requests that allocate and contend for a lock, with custom events
demo.HTTPRequest and demo.LockWait) under the event recorder with the
settings preset --settings names ("profile" unless told: stack traces and
CPU samples; "default": neither), writes the recording to demo.jfr in the
working directory, and prints its summary and how to open it.

It then runs a 3-node cluster on loopback TCP, one process per node with
message-flow tracing (package flow): requests handed to worker pools,
responses, fan-outs to all nodes, injected loss and retransmission. It
writes node-A.jfr, node-B.jfr and node-C.jfr, merges them and prints a few
traces and the statistics of flightrec flow. --cluster=false skips it.`,
	SetFlags: func(fs *flag.FlagSet) {
		fs.Duration("duration", 3*time.Second, "how long the workload runs")
		fs.String("out", "demo.jfr", "the recording `file`")
		fs.String("settings", "profile", "the recorder's settings `preset`: default or profile")
		fs.Bool("cluster", true, "also run the 3-node message-flow cluster")
		fs.Int("requests", 20, "requests each cluster node sends")
		fs.Int("node", -1, "internal: run cluster node `i`")
		fs.String("peers", "", "internal: the cluster's addresses")
	},
	Run: func(ctx context.Context, env *cli.Env, fs *flag.FlagSet, args []string) error {
		if len(args) != 0 {
			return cli.Usagef("unexpected arguments %q", args)
		}
		// Out of range, they gave an empty recording, or a cluster that
		// sent nothing and a merge that said its recordings were not ones.
		requests := fs.Lookup("requests").Value.(flag.Getter).Get().(int)
		if requests < 1 {
			return cli.Usagef("--requests %d: want at least 1", requests)
		}
		d := fs.Lookup("duration").Value.(flag.Getter).Get().(time.Duration)
		if d <= 0 {
			return cli.Usagef("--duration %v: want a positive duration", d)
		}
		if i := fs.Lookup("node").Value.(flag.Getter).Get().(int); i >= 0 {
			return runClusterNode(ctx, env, i, strings.Split(fs.Lookup("peers").Value.String(), ","), requests)
		}
		o := fs.Lookup("out").Value.String()
		dur, out := &d, &o
		settings, err := recorder.Preset(fs.Lookup("settings").Value.String())
		if err != nil {
			return cli.Usagef("--settings %q: want default or profile", fs.Lookup("settings").Value.String())
		}
		rec, err := recorder.Start(recorder.WithName("flightrec demo"), recorder.WithFile(*out), recorder.WithSettings(settings))
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				return outputError("--out", *out, err)
			}
			return err
		}
		runDemoWorkload(ctx, *dur)
		if err := rec.Stop(); err != nil {
			return err
		}
		data, err := os.ReadFile(*out)
		if err != nil {
			return err
		}
		s, err := jfrtool.SummarizeAt(bytes.NewReader(data), int64(len(data)), runtime.GOMAXPROCS(0))
		if err != nil {
			return err
		}
		if err := s.WriteText(env.Stdout); err != nil {
			return err
		}
		abs, _ := filepath.Abs(*out)
		fmt.Fprintf(env.Stdout, `
Open it with:
  flightrec print %[1]s              (or --json; flightrec summary %[1]s)
  jfr print --events demo.HTTPRequest %[1]s
  jmc, File > Open File... %[2]s       (JDK Mission Control: Method Profiling, Memory, GC pages)
`, *out, abs)
		if fs.Lookup("cluster").Value.(flag.Getter).Get().(bool) {
			fmt.Fprintln(env.Stdout)
			return runCluster(ctx, env, requests)
		}
		return nil
	},
}

// runDemoWorkload serves fake requests from 4 workers until d has passed,
// and does real I/O through package jdkio beside them (demoIO).
func runDemoWorkload(ctx context.Context, d time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mu sync.Mutex
	cache := map[string][]byte{}
	paths := []string{"/", "/api/users", "/api/orders", "/static/app.js", "/health"}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		demoIO(ctx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		refreshDemoCache(ctx, &mu)
	}()
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			event.SetGoroutineName(fmt.Sprintf("worker-%d", w), "pool", "http")
			defer event.SetGoroutineName("")
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for ctx.Err() == nil {
				serveDemoRequest(rng, w, paths[rng.IntN(len(paths))], &mu, cache)
			}
		}()
	}
	wg.Wait()
}

// refreshDemoCache reloads the workers' cache every 300 ms, holding its
// lock for the 25 ms of the (simulated) reload, as a service that reads
// its configuration under a lock does: the workers wait on the mutex
// longer than the presets' thresholds (jdk.JavaMonitorEnter with the
// tracer, JMC's Java Blocking rule), on an idle machine as on a busy one.
func refreshDemoCache(ctx context.Context, mu *sync.Mutex) {
	event.SetGoroutineName("cache-refresh")
	defer event.SetGoroutineName("")
	t := time.NewTicker(300 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		mu.Lock()
		time.Sleep(25 * time.Millisecond)
		mu.Unlock()
	}
}

func serveDemoRequest(rng *rand.Rand, worker int, path string, mu *sync.Mutex, cache map[string][]byte) {
	var ev demoRequest
	demoRequestEvent.Begin(&ev)
	// Allocation: build a response.
	var b strings.Builder
	n := 1000 + rng.IntN(20000)
	for i := 0; i < n/10; i++ {
		b.WriteString("0123456789")
	}
	body := []byte(b.String())
	// CPU work.
	sum := 0
	for i := range body {
		sum += int(body[i]) * i
	}
	// Lock contention on a shared cache.
	var lw demoLockWait
	demoLockEvent.Begin(&lw)
	mu.Lock()
	if lw.ShouldCommit() {
		lw.Lock = "cache"
	}
	lw.Commit()
	cache[path] = body
	time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
	mu.Unlock()
	status := int32(200)
	if sum%17 == 0 {
		status = 500
	}
	if ev.ShouldCommit() {
		ev.Method, ev.Path, ev.Status, ev.Bytes, ev.Worker = "GET", path, status, int64(len(body)), int32(worker)
	}
	ev.Commit()
}

// demoIO does real I/O through the jdkio wrappers until ctx ends, so that
// the recording has the JDK's socket and file event types (events only of
// calls over their threshold): a loopback HTTP server and a client
// fetching from it, and an access log written, synced and read back in a
// temporary file. Failures only end it early: the demo is about the rest.
func demoIO(ctx context.Context) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return
	}
	body := []byte(strings.Repeat("flightrec demo ", 1000))
	export := bytes.Repeat([]byte("flightrec export "), 1<<20) // 17 MiB
	// /api/report answers after 30 ms, as a slow backend does: the
	// client's read of it waits past the socket thresholds (10 ms in
	// profile, 20 in default). /api/export is a large download to a slow
	// consumer (demoSlowDownload): the server's write waits for the
	// client to drain the socket.
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/report":
			time.Sleep(30 * time.Millisecond)
		case "/api/export":
			w.Write(export)
			return
		}
		w.Write(body)
	})}
	go srv.Serve(jdkio.WrapListener(l))
	defer srv.Close()
	tr := jdkio.Transport(nil)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	base := "http://localhost:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	var slow sync.WaitGroup
	slow.Go(func() { demoSlowDownload(ctx, base+"/api/export") })
	defer slow.Wait()

	dir, err := os.MkdirTemp("", "flightrec-demo-")
	if err != nil {
		return
	}
	defer os.RemoveAll(dir)
	log, err := jdkio.Create(filepath.Join(dir, "access.log"))
	if err != nil {
		return
	}
	defer log.Close()
	buf := make([]byte, 64<<10)
	var off int64
	for n := 0; ctx.Err() == nil; n++ {
		path := "/api/orders"
		if n%20 == 19 {
			path = "/api/report"
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			return
		}
		got, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Fprintf(log, "%s GET %s 200 %d\n", time.Now().Format(time.RFC3339Nano), path, got)
		if n%50 == 49 {
			log.Sync()
			// A log shipper reads what was written since.
			for {
				k, err := log.ReadAt(buf, off)
				off += int64(k)
				if err != nil || k == 0 {
					break
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// demoSlowDownload fetches url once a second and reads it slowly, 64 KiB
// a millisecond, as a client on a slow link does: the server's write of
// the response waits on the full socket (jdk.SocketWrite past the
// thresholds, JMC's Socket Write Peak Duration rule).
func demoSlowDownload(ctx context.Context, url string) {
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	buf := make([]byte, 64<<10)
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		resp, err := client.Do(req)
		if err != nil {
			return
		}
		for ctx.Err() == nil {
			if _, err := resp.Body.Read(buf); err != nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		resp.Body.Close()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
