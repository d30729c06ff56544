package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/flightrec/flightrec/internal/cli"
	"github.com/flightrec/flightrec/view"
)

var viewCmd = &cli.Command{
	Name:      "view",
	UsageLine: "view [--http ADDR] [--no-browser] FILE...",
	Short:     "explore recordings in the browser",
	Long: `
View indexes the recordings (any JVM's or flightrec's; several nodes' flow
recordings at once) and serves a web UI on this machine: an Overview (event
types with counts, sizes and rates; findings: data loss, GC pauses, the
hottest method, lock waits, truncated stacks), a Flame graph of any
stack-carrying types (weighted by count, duration or a numeric field;
thread and time filters; top-down or bottom-up; search; zoom), a Timeline
(a lane per thread, counters above; drag to pick a time range, which then
filters every page), an Event browser (type tree, paged sortable table,
detail with the stack) and, when the recordings hold flow events, the
merged traces with a sequence diagram each.

It listens on ADDR (default 127.0.0.1 on a random port), prints the URL
and opens it in the browser ($BROWSER, else xdg-open or open) unless
--no-browser. It answers only clients on this machine, works offline and
runs until interrupted. The JSON API under /api/ is described in the
README.`,
	SetFlags: func(fs *flag.FlagSet) {
		fs.String("http", "127.0.0.1:0", "the loopback `address` to listen on")
		fs.Bool("no-browser", false, "do not open a browser")
	},
	Run: runView,
}

func runView(ctx context.Context, env *cli.Env, fs *flag.FlagSet, args []string) error {
	if len(args) == 0 {
		return cli.Usagef("expected at least one recording file")
	}
	addr := flagString(fs, "http")
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return cli.Usagef("bad --http address %q: %v", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return cli.Usagef("--http %s: flightrec view listens on a loopback address only (127.0.0.1, [::1], localhost)", addr)
	}
	start := time.Now()
	ix, err := view.Open(args)
	if err != nil {
		return err
	}
	defer ix.Close()
	took := time.Since(start)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(env.Stdout, "flightrec view: %d events indexed in %v; serving %s (Ctrl-C to stop)\n", ix.Events, took.Round(time.Millisecond), url)
	if !flagBool(fs, "no-browser") {
		if err := openBrowser(url); err != nil {
			fmt.Fprintf(env.Stderr, "flightrec view: could not open a browser (%v); open %s\n", err, url)
		}
	}
	srv := &http.Server{Handler: view.NewServer(ix, took), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// openBrowser starts the user's browser on url without waiting for it.
func openBrowser(url string) error {
	var cmds [][]string
	if b := os.Getenv("BROWSER"); b != "" {
		cmds = append(cmds, []string{b, url})
	}
	switch runtime.GOOS {
	case "darwin":
		cmds = append(cmds, []string{"open", url})
	case "windows":
		cmds = append(cmds, []string{"cmd", "/c", "start", url})
	default:
		cmds = append(cmds, []string{"xdg-open", url})
	}
	var err error
	for _, c := range cmds {
		cmd := exec.Command(c[0], c[1:]...)
		if err = cmd.Start(); err == nil {
			go cmd.Wait()
			return nil
		}
	}
	return err
}
