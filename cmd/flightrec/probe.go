//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/flightrec/flightrec/internal/cli"
	"github.com/flightrec/flightrec/internal/gobin"
	"github.com/flightrec/flightrec/probe"
)

type probeFlags struct {
	pid      int
	list     bool
	duration time.Duration
	interval time.Duration
	json     bool
	trace    bool
	args     bool
	strlen   int
	stack    bool
	sample   uint
	out      string
	where    string
}

func readProbeFlags(fs *flag.FlagSet) probeFlags {
	get := func(name string) any { return fs.Lookup(name).Value.(flag.Getter).Get() }
	return probeFlags{
		pid:      get("p").(int),
		list:     get("list").(bool),
		duration: get("duration").(time.Duration),
		interval: get("interval").(time.Duration),
		json:     get("json").(bool),
		trace:    get("trace").(bool),
		args:     get("args").(bool),
		strlen:   get("strlen").(int),
		stack:    get("stack").(bool),
		sample:   get("sample").(uint),
		out:      get("out").(string),
		where:    get("where").(string),
	}
}

var probeCmd = &cli.Command{
	Name:      "probe",
	UsageLine: "probe [flags] -p PID FUNC... | probe [flags] FUNC... -- PROGRAM [ARG...] | probe --list (-p PID | BINARY) [PATTERN]",
	Short:     "count and time calls of a running Go program with eBPF uprobes",
	// FUNC... -- PROGRAM ARG...: the "--" separates the two.
	KeepDashDash: true,
	Long: `
Probe attaches eBPF uprobes to functions of a running, unmodified Go program
(linux/amd64, built by Go 1.21 or later, with or without symbols and DWARF)
and reports its calls. It needs root, or CAP_BPF and CAP_PERFMON.

FUNC is a function as Go names it (main.work, net/http.(*conn).serve,
pkg.F[...] for every instantiation of a generic function) or a glob in
which * matches anything (main.*). FUNC alone probes calls: its
entry and every RET instruction, giving counts and durations. FUNC:entry
probes only the entry, the cheapest probe: counts (and arguments).

When the probes are in place it prints 'attached N probes to PID P' on
stderr (N counts probed functions). It stops at --duration, at SIGINT or
SIGTERM, or when the target exits; it detaches, leaving the target running
as before, and prints per probe the calls, the calls per goroutine, the
duration min/mean/p50/p99/max (p50 and p99 within 1/64) and a log2
histogram of durations in nanoseconds.

--where EXPR keeps only the calls matching EXPR, over argument and result
names (as DWARF has them; unnamed results are ~r0, ~r1...) and duration:
integer, float and string constants, durations with units (2ms), + - * / %,
comparisons, &&, || and !. Its top-level &&-terms over integers, booleans
and duration are compiled into the BPF programs, so records they reject
never leave the kernel; the whole expression (strings, floats, unsigned
values too) is then checked in user space. It implies --args; the summary
then counts the matching calls.
--sample N keeps the record of one call in N (a random draw in the
kernel); the counts stay exact.

--out FILE.jfr writes every call as a JFR event flightrec.probe.<function>
(start, duration, the goroutine as thread, arguments and results as
fields, the stack with --stack), on the recorder's clock.

--list prints the functions of the program (from .gopclntab) matching
PATTERN, with their entry address and size. PATTERN is a glob of the
whole name: '*' matches any run of characters, '?' one, the rest itself
('main.*', '*Handler*', 'pkg.F[*]' for a generic function's instances).

With '-- PROGRAM [ARG...]' it starts PROGRAM stopped, attaches, then lets
it run, so its first calls are seen.`,
	SetFlags: func(fs *flag.FlagSet) {
		fs.Int("p", 0, "probe the process with this `PID`")
		fs.Bool("list", false, "list the functions of the program instead of probing")
		fs.Duration("duration", 0, "stop after this long (0: until interrupted or the target exits)")
		fs.Duration("interval", 0, "print the summary every `D` while probing (with --json, one document per line)")
		fs.Bool("json", false, "print the summary (and --trace lines) as JSON")
		fs.Bool("trace", false, "print one line per call")
		fs.Bool("args", false, "capture arguments at entry and results at every return")
		fs.Int("strlen", 64, "bytes kept of each string argument")
		fs.Bool("stack", false, "capture the goroutine's stack of each call")
		fs.Uint("sample", 0, "keep the record of one call in `N` (counts stay exact)")
		fs.String("out", "", "write every call as a JFR event to `FILE.jfr`")
		fs.String("where", "", "keep only the calls matching `EXPR` (e.g. 'duration > 2ms && n % 7 == 3')")
	},
	Run: func(ctx context.Context, env *cli.Env, fs *flag.FlagSet, args []string) error {
		o := readProbeFlags(fs)
		if o.duration < 0 || o.interval < 0 {
			return cli.Usagef("--duration and --interval must not be negative")
		}
		if o.pid < 0 {
			return cli.Usagef("-p %d: a process id is a positive number", o.pid)
		}
		if o.list {
			return probeList(env, o, args)
		}
		funcs, program := splitProgram(args)
		if len(funcs) == 0 {
			return cli.Usagef("name at least one function to probe")
		}
		if (o.pid == 0) == (program == nil) {
			return cli.Usagef("give either -p PID or -- PROGRAM [ARG...]")
		}
		return probeRun(ctx, env, o, funcs, program)
	},
}

// splitProgram splits FUNC... -- PROGRAM ARG... at the "--".
func splitProgram(args []string) (funcs, program []string) {
	for i, a := range args {
		if a == "--" {
			return args[:i], args[i+1:]
		}
	}
	return args, nil
}

func probeList(env *cli.Env, o probeFlags, args []string) error {
	var path, pattern string
	switch {
	case o.pid != 0:
		exe, err := probe.Executable(o.pid)
		if err != nil {
			return err
		}
		path = exe
		if len(args) > 1 {
			return cli.Usagef("--list -p PID takes at most a PATTERN")
		}
		if len(args) == 1 {
			pattern = args[0]
		}
	case len(args) >= 1 && len(args) <= 2:
		path = args[0]
		if len(args) == 2 {
			pattern = args[1]
		}
	default:
		return cli.Usagef("--list needs -p PID or a BINARY, and at most a PATTERN")
	}
	bin, err := gobin.Open(path)
	if err != nil {
		return err
	}
	defer bin.Close()
	for _, fn := range bin.Funcs {
		if pattern == "" || gobin.Glob(pattern, fn.Name) {
			fmt.Fprintf(env.Stdout, "%#x %6d %s\n", fn.Entry, fn.End-fn.Entry, fn.Name)
		}
	}
	return nil
}

func probeRun(ctx context.Context, env *cli.Env, o probeFlags, funcs, program []string) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := probe.Options{
		Funcs:   funcs,
		Args:    o.args,
		StrLen:  o.strlen,
		Stack:   o.stack,
		Records: o.trace || o.out != "",
		Sample:  uint32(o.sample),
		Where:   o.where,
	}
	var child *probe.Child
	pid := o.pid
	if program != nil {
		var err error
		child, err = probe.StartStopped(program, os.Stdin, env.Stdout, env.Stderr)
		if err != nil {
			return err
		}
		pid = child.PID
	}
	s, err := probe.Attach(pid, opts)
	if err != nil {
		if child != nil {
			child.Kill()
		}
		return err
	}
	defer s.Close()
	rec, err := newRecording(o.out, s)
	if err != nil {
		if child != nil {
			child.Kill()
		}
		return err
	}
	fmt.Fprintf(env.Stderr, "attached %d probes to PID %d\n", len(s.Probes), pid)
	if child != nil {
		if err := child.Resume(); err != nil {
			return err
		}
	}
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	var onCall func(*probe.Call)
	var werr error
	if o.trace || o.out != "" {
		enc := json.NewEncoder(env.Stdout)
		onCall = func(c *probe.Call) {
			if werr == nil {
				werr = rec.Write(c)
			}
			if !o.trace {
				return
			}
			if o.json {
				enc.Encode(traceJSON(s, c))
			} else {
				fmt.Fprintln(env.Stdout, traceLine(c))
			}
		}
	}
	if o.interval > 0 {
		go func() {
			t := time.NewTicker(o.interval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					sums, err := s.Summaries()
					switch {
					case err != nil:
					case o.json:
						writeSummaryJSON(env.Stdout, pid, sums, false)
					default:
						writeSummaryText(env.Stdout, sums)
					}
				}
			}
		}()
	}
	runErr := s.Run(ctx, onCall)
	if child != nil {
		child.Wait(ctx)
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) && !errors.Is(runErr, context.DeadlineExceeded) {
		return runErr
	}
	sums, err := s.Summaries()
	if err != nil {
		return err
	}
	if werr == nil {
		werr = rec.Close(sums)
	}
	if werr != nil {
		return outputError("--out", o.out, werr)
	}
	if o.json {
		return writeSummaryJSON(env.Stdout, pid, sums, !o.trace && o.interval == 0)
	}
	writeSummaryText(env.Stdout, sums)
	return nil
}

func traceLine(c *probe.Call) string {
	line := fmt.Sprintf("%s goroutine %d %s(", c.Start.Format("15:04:05.000000000"), c.Goid, c.Probe.Func)
	for i, a := range c.Args {
		if i > 0 {
			line += ", "
		}
		line += a.Param.Name + "=" + a.String()
	}
	line += ")"
	if !c.End.IsZero() {
		if len(c.Results) > 0 {
			line += " ->"
			for i, r := range c.Results {
				if i > 0 {
					line += ","
				}
				line += " " + r.Param.Name + "=" + r.String()
			}
		}
		line += " " + c.Duration().String()
	}
	return line
}

// traceRecord is one --trace --json line, its keys in the order.
type traceRecord struct {
	Func       string         `json:"func"`
	Goroutine  uint64         `json:"goroutine"`
	Time       string         `json:"time"`
	DurationNS *int64         `json:"duration_ns,omitempty"`
	Args       map[string]any `json:"args,omitempty"`
	Results    map[string]any `json:"results,omitempty"`
	Stack      []string       `json:"stack,omitempty"`
}

func traceJSON(s *probe.Session, c *probe.Call) traceRecord {
	r := traceRecord{Func: c.Probe.Func, Goroutine: c.Goid, Time: c.Start.UTC().Format(time.RFC3339Nano)}
	if !c.End.IsZero() {
		d := c.Duration().Nanoseconds()
		r.DurationNS = &d
	}
	if c.Args != nil || c.Results != nil {
		r.Args = map[string]any{}
		for _, a := range c.Args {
			r.Args[a.Param.Name] = a.JSON()
		}
		if !c.End.IsZero() {
			r.Results = map[string]any{}
			for _, v := range c.Results {
				r.Results[v.Param.Name] = v.JSON()
			}
		}
	}
	for _, f := range s.Symbolize(c.Stack) {
		r.Stack = append(r.Stack, f.String())
	}
	return r
}

func writeSummaryText(w io.Writer, sums []probe.Summary) {
	for _, s := range sums {
		fmt.Fprintf(w, "%s (%s): %d calls, %d dropped\n", s.Func, s.Kind, s.Calls, s.Dropped+s.Lost)
		if len(s.Goroutines) > 0 {
			fmt.Fprintf(w, "  %-12s %12s\n", "goroutine", "calls")
		}
		for _, g := range probe.SortedGoroutines(s.Goroutines) {
			fmt.Fprintf(w, "  %-12d %12d\n", g, s.Goroutines[g])
		}
		if d := s.Durations; d != nil && d.N > 0 {
			fmt.Fprintf(w, "  duration: min %s, mean %s, p50 %s, p99 %s, max %s\n",
				ns(d.Min), ns(d.Mean()), ns(d.Quantile(0.5)), ns(d.Quantile(0.99)), ns(d.Max))
			fmt.Fprintln(w, "  @ns:")
			probe.WriteHist(w, d.Log2())
		}
		fmt.Fprintln(w)
	}
}

func ns(v uint64) string { return time.Duration(v).String() }

// writeSummaryJSON writes the final summary document, on one line when it
// follows --trace lines.
func writeSummaryJSON(w io.Writer, pid int, sums []probe.Summary, indent bool) error {
	type dur struct {
		Min      uint64      `json:"min"`
		Mean     uint64      `json:"mean"`
		P50      uint64      `json:"p50"`
		P99      uint64      `json:"p99"`
		Max      uint64      `json:"max"`
		Log2Hist [][3]uint64 `json:"log2_hist"`
	}
	type probeJSON struct {
		Func       string            `json:"func"`
		Kind       string            `json:"kind"`
		Calls      uint64            `json:"calls"`
		Dropped    uint64            `json:"dropped"`
		Goroutines map[string]uint64 `json:"goroutines"`
		Duration   *dur              `json:"duration_ns,omitempty"`
	}
	doc := struct {
		PID    int         `json:"pid"`
		Probes []probeJSON `json:"probes"`
	}{PID: pid, Probes: []probeJSON{}}
	for _, s := range sums {
		p := probeJSON{Func: s.Func, Kind: s.Kind, Calls: s.Calls, Dropped: s.Dropped + s.Lost, Goroutines: map[string]uint64{}}
		for g, n := range s.Goroutines {
			p.Goroutines[strconv.FormatUint(g, 10)] = n
		}
		if d := s.Durations; d != nil {
			p.Duration = &dur{Min: d.Min, Mean: d.Mean(), P50: d.Quantile(0.5), P99: d.Quantile(0.99), Max: d.Max, Log2Hist: [][3]uint64{}}
			for _, b := range d.Log2() {
				p.Duration.Log2Hist = append(p.Duration.Log2Hist, [3]uint64{b.Lo, b.Hi, b.Count})
			}
		}
		doc.Probes = append(doc.Probes, p)
	}
	enc := json.NewEncoder(w)
	if indent {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(doc)
}

// probeRecording writes probed calls to a JFR file with --out, and does
// nothing without it.
type probeRecording struct{ w *probe.JFRWriter }

func newRecording(path string, s *probe.Session) (*probeRecording, error) {
	if path == "" {
		return &probeRecording{}, nil
	}
	w, err := probe.CreateJFR(path, s)
	if err != nil {
		return nil, outputError("--out", path, err)
	}
	return &probeRecording{w}, nil
}

func (r *probeRecording) Write(c *probe.Call) error {
	if r.w == nil {
		return nil
	}
	return r.w.Write(c)
}

func (r *probeRecording) Close(sums []probe.Summary) error {
	if r.w == nil {
		return nil
	}
	return r.w.Close(sums)
}
