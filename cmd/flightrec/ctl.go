package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flightrec/flightrec/internal/cli"
	"github.com/flightrec/flightrec/internal/ctlproto"
	"github.com/flightrec/flightrec/internal/jfrtool"
	"github.com/flightrec/flightrec/jfr"
)

var ctlCmd = &cli.Command{
	Name:      "ctl",
	UsageLine: "ctl [PID start|check|configure|dump|stop|stream [flags] [EVENT#SETTING=VALUE...]]",
	Short:     "control the recordings of a running Go program (as jcmd PID JFR.*)",
	Long: `
Ctl controls a running Go program that accepts control: one whose main
calls agent.Listen (package github.com/flightrec/flightrec/agent). With no
arguments it lists the local processes that do: pid, program, Go version
and number of recordings.

	ctl PID start [--name N] [--settings default|profile|FILE.jfc] [--filename F]
	              [--duration D] [--max-size S] [--max-age D] [--disk] [EVENT#SETTING=VALUE...]
	ctl PID check [--name N] [--verbose]
	ctl PID configure --name N [--settings S] EVENT#SETTING=VALUE...
	ctl PID dump --name N --filename F [--begin T] [--end T]
	ctl PID stop --name N [--filename F]
	ctl PID stream [--events GLOB,...] [--json]

check lists the recordings: id, name, destination, size, limits and
state; --verbose adds their settings.

start starts a recording and prints its id and name. With --filename and
no --max-size or --max-age it writes the file as it records; otherwise it
keeps the last max-size/max-age (default 64 MB) in memory, and writes it to
--filename when stopped. --disk also keeps its chunks in a disk
repository, which survives a crash (flightrec assemble joins them).

EVENT#SETTING=VALUE sets enabled, threshold, stackTrace or period of an
event type: app.HTTPRequest#threshold=10ms, jdk.CPULoad#period=1s,
*#stackTrace=true. configure changes them while the recording runs,
effective within a second.

dump writes what a recording holds now (memory, repository or file) to
--filename; --begin and --end (2026-11-24T13:00:00Z, 13:00:00, or -5m for
five minutes ago) keep the chunks that overlap the range.

stream prints the program's events as they are recorded, in the format of
'flightrec print' or, with --json, one JSON object per line, until
interrupted. It starts a recording with the matching events on and removes
it when it ends.

Durations are 30s, 10m, 1h or 2d; sizes 500k, 100m, 1g. Relative file names
are made absolute here; the program writes the files, with its own
permissions. Only the program's user and root may control it.`,
	SetFlags: func(fs *flag.FlagSet) {
		fs.String("name", "", "recording `name` or id")
		fs.String("settings", "", "`preset` (default or profile) or .jfc file")
		fs.String("filename", "", "`file` to write")
		fs.String("duration", "", "stop the recording after `D`")
		fs.String("max-size", "", "keep at most `S` bytes (e.g. 100m)")
		fs.String("max-age", "", "keep at most the last `D`")
		fs.Bool("disk", false, "also keep the chunks in a disk repository")
		fs.String("begin", "", "dump: chunks from time `T`")
		fs.String("end", "", "dump: chunks up to time `T`")
		fs.String("events", "", "stream: event type `globs`, comma-separated")
		fs.Bool("json", false, "stream: one JSON object per event and line")
		fs.Bool("verbose", false, "check: also print every setting")
	},
	Run: runCtl,
}

// ctlFlags lists the flags each subcommand takes.
var ctlFlags = map[string][]string{
	ctlproto.CmdStart:     {"name", "settings", "filename", "duration", "max-size", "max-age", "disk"},
	ctlproto.CmdCheck:     {"name", "verbose"},
	ctlproto.CmdConfigure: {"name", "settings"},
	ctlproto.CmdDump:      {"name", "filename", "begin", "end"},
	ctlproto.CmdStop:      {"name", "filename"},
	ctlproto.CmdStream:    {"events", "json"},
}

// ctlTimeout bounds a request's round trip; a dump may copy a large ring.
const ctlTimeout = 60 * time.Second

func runCtl(ctx context.Context, env *cli.Env, fs *flag.FlagSet, args []string) error {
	if len(args) == 0 {
		return ctlList(env.Stdout, env.Stderr)
	}
	pid, err := strconv.Atoi(args[0])
	if err != nil || pid <= 0 {
		return cli.Usagef("expected a process id (a positive number), got %q", args[0])
	}
	if len(args) < 2 {
		return cli.Usagef("expected a command after the pid: start, check, configure, dump, stop or stream")
	}
	cmd, rest := args[1], args[2:]
	allowed, ok := ctlFlags[cmd]
	if !ok {
		return cli.Usagef("unknown ctl command %q (want start, check, configure, dump, stop or stream)", cmd)
	}
	var bad []string
	fs.Visit(func(f *flag.Flag) {
		if !contains(allowed, f.Name) {
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		return cli.Usagef("%s does not take %s", cmd, strings.Join(bad, ", "))
	}
	req, err := ctlRequest(cmd, fs, rest)
	if err != nil {
		return err
	}
	if cmd == ctlproto.CmdStream {
		return ctlStream(ctx, env, pid, req, fs.Lookup("json").Value.String() == "true")
	}
	resp, conn, err := ctlproto.Call(pid, req, ctlTimeout)
	if err != nil {
		// The program writes --filename and answers with its system
		// error, a string naming the path but not the flag.
		if req.Filename != "" && strings.Contains(err.Error(), req.Filename) {
			return fmt.Errorf("--filename %s: %w", req.Filename, err)
		}
		return err
	}
	conn.Close()
	printResponse(env.Stdout, pid, cmd, resp, fs.Lookup("verbose").Value.String() == "true")
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ctlRequest builds the request from the flags and arguments.
func ctlRequest(cmd string, fs *flag.FlagSet, rest []string) (ctlproto.Request, error) {
	get := func(name string) string { return fs.Lookup(name).Value.String() }
	req := ctlproto.Request{Command: cmd, Name: get("name"), Settings: get("settings"), Disk: get("disk") == "true"}
	for _, a := range rest {
		if !strings.Contains(a, "#") || !strings.Contains(a, "=") {
			return req, cli.Usagef("unexpected argument %q (settings are EVENT#SETTING=VALUE)", a)
		}
	}
	if len(rest) > 0 && cmd != ctlproto.CmdStart && cmd != ctlproto.CmdConfigure {
		return req, cli.Usagef("%s takes no EVENT#SETTING=VALUE settings", cmd)
	}
	req.Options = rest
	if f := get("filename"); f != "" {
		abs, err := filepath.Abs(f)
		if err != nil {
			return req, err
		}
		req.Filename = abs
	}
	if s := req.Settings; s != "" && s != "default" && s != "profile" {
		abs, err := filepath.Abs(s)
		if err != nil {
			return req, err
		}
		req.Settings = abs
	}
	var err error
	for _, d := range []struct {
		flag string
		dst  *time.Duration
	}{{"duration", &req.Duration}, {"max-age", &req.MaxAge}} {
		if v := get(d.flag); v != "" {
			if *d.dst, err = ctlproto.ParseDuration(v); err != nil {
				return req, cli.Usagef("--%s: %v", d.flag, err)
			}
		}
	}
	if v := get("max-size"); v != "" {
		if req.MaxSize, err = ctlproto.ParseSize(v); err != nil {
			return req, cli.Usagef("--max-size: %v", err)
		}
	}
	now := time.Now()
	for _, t := range []struct {
		flag string
		dst  *time.Time
	}{{"begin", &req.Begin}, {"end", &req.End}} {
		if v := get(t.flag); v != "" {
			if *t.dst, err = ctlproto.ParseTime(v, now); err != nil {
				return req, cli.Usagef("--%s: %v", t.flag, err)
			}
		}
	}
	if v := get("events"); v != "" {
		req.Events = strings.Split(v, ",")
	}
	switch cmd {
	case ctlproto.CmdConfigure:
		if req.Name == "" || (len(rest) == 0 && req.Settings == "") {
			return req, cli.Usagef("configure needs --name and EVENT#SETTING=VALUE settings")
		}
	case ctlproto.CmdDump:
		if req.Name == "" || req.Filename == "" {
			return req, cli.Usagef("dump needs --name and --filename")
		}
	case ctlproto.CmdStop:
		if req.Name == "" {
			return req, cli.Usagef("stop needs --name")
		}
	}
	return req, nil
}

// ctlList prints the local processes that accept control, and says on
// errOut how a program opts in when none does: a bare header told a
// newcomer nothing.
func ctlList(w, errOut io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tPROGRAM\tGO\tRECORDINGS")
	cands := ctlproto.Candidates()
	if len(cands) == 0 {
		dir := ctlproto.Dir(os.Getuid())
		if os.Getuid() == 0 {
			dir = filepath.Join(os.TempDir(), "flightrec-*") // root lists every user's
		}
		fmt.Fprintf(errOut, "flightrec ctl: no process accepts control (no socket in %s): a Go program opts in with one line in main, agent.Listen(agent.Options{}) (package github.com/flightrec/flightrec/agent)\n", dir)
	}
	for _, c := range cands {
		resp, conn, err := ctlproto.Call(c.PID, ctlproto.Request{Command: ctlproto.CmdInfo}, 2*time.Second)
		if err != nil {
			fmt.Fprintf(tw, "%d\t-\t-\t-\t(%v)\n", c.PID, err)
			continue
		}
		conn.Close()
		p := resp.Process
		if p == nil {
			continue
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\n", p.PID, p.Program, p.GoVersion, p.Recordings)
	}
	return tw.Flush()
}

func printResponse(w io.Writer, pid int, cmd string, resp *ctlproto.Response, verbose bool) {
	switch cmd {
	case ctlproto.CmdStart:
		for _, r := range resp.Recordings {
			fmt.Fprintf(w, "Started recording %d %q: %s\n", r.ID, r.Name, r.Destination)
			if r.Repository != "" {
				fmt.Fprintf(w, "Disk repository: %s\n", r.Repository)
			}
			fmt.Fprintf(w, "Use 'flightrec ctl %d dump --name %s --filename FILE' to copy its data to a file.\n", pid, r.Name)
		}
	case ctlproto.CmdCheck, ctlproto.CmdConfigure:
		if cmd == ctlproto.CmdCheck && len(resp.Recordings) == 0 {
			fmt.Fprintln(w, "No available recordings.")
		}
		for _, r := range resp.Recordings {
			printRecording(w, r, verbose || cmd == ctlproto.CmdConfigure)
		}
	default:
		fmt.Fprintln(w, resp.Message)
	}
}

func printRecording(w io.Writer, r ctlproto.RecordingInfo, settings bool) {
	fmt.Fprintf(w, "Recording %d: name=%s destination=%q size=%s started=%s", r.ID, r.Name, r.Destination, humanBytes(r.Size),
		r.Start.Format(time.RFC3339))
	if r.Duration > 0 {
		fmt.Fprintf(w, " duration=%s", r.Duration)
	}
	if r.MaxSize > 0 {
		fmt.Fprintf(w, " maxsize=%s", humanBytes(r.MaxSize))
	}
	if r.MaxAge > 0 {
		fmt.Fprintf(w, " maxage=%s", r.MaxAge)
	}
	fmt.Fprintf(w, " (%s)\n", r.State)
	if r.Repository != "" {
		fmt.Fprintf(w, "  repository: %s\n", r.Repository)
	}
	if settings {
		for _, s := range r.Settings {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f kB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// ctlStream prints the events of the segments the process streams until
// interrupted: at each flush, the events it added, sorted by end time.
func ctlStream(ctx context.Context, env *cli.Env, pid int, req ctlproto.Request, asJSON bool) error {
	_, conn, err := ctlproto.Call(pid, req, ctlTimeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	format := jfrtool.FormatPretty
	if asJSON {
		format = jfrtool.FormatJSONLines
	}
	pr := jfrtool.NewPartPrinter(env.Stdout, format, jfrtool.PrintOptions{Events: strings.Join(req.Events, ","), StackDepth: 5})
	var sc streamedChunk
	for {
		kind, body, err := ctlproto.ReadFrame(conn, ctlproto.MaxFrame)
		if err != nil {
			if ctx.Err() != nil {
				return nil // interrupted
			}
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("process %d ended the stream", pid)
			}
			return fmt.Errorf("process %d: stream: %w", pid, err)
		}
		if kind == ctlproto.KindJSON {
			var note ctlproto.Response
			if json.Unmarshal(body, &note) == nil {
				fmt.Fprintf(env.Stderr, "flightrec ctl: process %d: %s%s\n", pid, note.Message, note.Error)
			}
			continue
		}
		c, parts, err := sc.add(body)
		if err == nil {
			err = pr.Print(c, parts...)
		}
		if err != nil {
			return fmt.Errorf("process %d: stream: %w", pid, err)
		}
	}
}

// streamedChunk is the chunk a stream's segments are adding to: its bytes
// so far, those not sent left as holes, and what jfr.LiveChunk has read
// of them, so that each segment's records are read once.
type streamedChunk struct {
	live  *jfr.LiveChunk
	num   uint64 // the chunk's number, 0 before the first
	buf   []byte
	seg   ctlproto.Segment
	parts []*jfr.Reader
}

// add takes a segment frame's body and returns the chunk as of it and a
// reader of each part it added.
func (sc *streamedChunk) add(body []byte) (*jfr.Chunk, []*jfr.Reader, error) {
	seg := &sc.seg
	if err := ctlproto.ParseSegment(body, seg); err != nil {
		return nil, nil, err
	}
	if sc.live == nil {
		// Each chunk's times are converted with its own header, as the
		// service's stream reads them.
		sc.live = jfr.NewLiveChunk(&jfr.ReaderOptions{PerChunkClock: true})
	}
	if seg.Chunk != sc.num {
		if seg.Chunk < sc.num || seg.Chunk == 0 {
			return nil, nil, fmt.Errorf("segment of chunk %d after chunk %d", seg.Chunk, sc.num)
		}
		sc.num = seg.Chunk
		sc.live.Start(int(seg.Chunk-1), 0)
		sc.buf = sc.buf[:0]
	}
	have := int64(len(sc.buf))
	if seg.Size < have {
		return nil, nil, fmt.Errorf("chunk %d: segment of %d bytes after %d", seg.Chunk, seg.Size, have)
	}
	if len(seg.Parts) > 0 && seg.Parts[0].Offset < have {
		return nil, nil, fmt.Errorf("chunk %d, byte offset %d: a segment rewrites bytes sent before (up to %d)", seg.Chunk, seg.Parts[0].Offset, have)
	}
	sc.buf = slices.Grow(sc.buf, int(seg.Size-have))[:seg.Size]
	clear(sc.buf[have:])
	for _, p := range seg.Parts {
		copy(sc.buf[p.Offset:], p.Data)
	}
	c, err := sc.live.Extend(seg.Header, sc.buf)
	if err != nil {
		return nil, nil, err
	}
	if err := sc.live.LoadConstants(); err != nil {
		return nil, nil, err
	}
	sc.parts = sc.parts[:0]
	for _, p := range seg.Parts {
		sc.parts = append(sc.parts, sc.live.Reader(p.Offset, p.Offset+int64(len(p.Data))))
	}
	return c, sc.parts, nil
}
