package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/flightrec/flightrec/analysis/flow"
	"github.com/flightrec/flightrec/analysis/flow/otlp"
	"github.com/flightrec/flightrec/internal/cli"
	"github.com/flightrec/flightrec/internal/ctlproto"
)

var flowCmd = &cli.Command{
	Name:      "flow",
	UsageLine: "flow traces|stats|cut|export [flags] FILES...",
	Short:     "merge the message flow of several nodes into traces and statistics",
	Long: `
Flow reads one input per node, each a flightrec recording with flow events
(one flow.Node per recording; also .jfr.gz) or a message-flow-tracer 2013
text span log (the node name comes from the recording, else from the file
name without its extension), and merges them into traces: the spans
connected through message IDs, one per request or timer-triggered
operation, in causal order (a send before its receipt; a node's own events
by its monotonic clock; then wall time corrected by clock offsets estimated
per 100 ms from the fastest message each way, following drift and steps).

	flow traces [--tag T] [--node N] [--min-duration D] [--since T] [--until T] FILES...
		the trace log (below); the filters keep the traces with that trace
		or message tag, with a span on node N, lasting at least D (a Go
		duration: 1.5ms), starting at or after --since and before --until
		(RFC 3339 times)
	flow stats [--messages] [--traces] [--locks] [--interceptors] FILES...
		the statistics (all four reports unless some are chosen), then INPUTS
	flow cut --message ID --out DIR FILES...
		the span logs of that message's trace, DIR/<node>.txt (DIR is
		made, before the merge, if missing); they say their clocks are
		corrected, so they merge again to the same trace
	flow export --otlp URL [traces filters] FILES...
		sends the traces as OpenTelemetry spans: OTLP/HTTP protobuf to
		URL/v1/traces (http://localhost:4318), or OTLP/gRPC to
		grpc://host:port (without TLS). One OTLP trace per flow trace, one
		span per node's handling of a message (start and end: its first
		and last event), parented to the span that sent the message;
		resource service.name = the node; attributes flightrec.node,
		flightrec.goroutine, flightrec.message.id, flightrec.message.sent,
		flightrec.message.tags, flightrec.trace.tags, flightrec.unfinished;
		checkpoints as span events; status error for a discarded message
		or a rejected hand-off. IDs derive from the trace's messages, so a
		second export of the same recordings replaces the first.

The trace log (message-flow-tracer's layout at microsecond precision):

	TRACE <n>: <k> msg          n numbers traces in the order they start
	<from>\t-> <to>, ...:\t<id>  per message (sorted by ID, numbers by value):
	                            the sending node, every node that handled it
	duration <d>, critical path A -> B -> A
	                            first to last event; the spans, linked by
	                            messages, that led to the last receipt
	HH:MM:SS.uuuuuu|<wall> ms|<local>|<graph>|node|thread|Type payload
	  time: corrected wall time (UTC); wall: since the previous line, ms;
	  local: since the node's previous event, by its own clock; graph: one
	  column per node thread, * this event, . the thread's span goes on

stats reports (times print as ns, us or ms with the precision that matters;
"n, mean, p50, p90, p99, max" is a distribution, percentiles by nearest
rank, exact up to 4096 values and within 1% beyond):

	MESSAGES, per message tag: incoming to handle (receipt to handling, per
	  receiving node); per route A -> B: unique (first handled copy), total,
	  discarded, ignored (handled again), lost (transmissions before a later
	  matched one that never arrived), duplicate (copies no transmission
	  accounts for); the one-way latency (receipt - send, corrected clocks);
	  mean latency of the tag. Then messages whose send or receipt is not in
	  the inputs, and those of nodes without input, counted apart.
	SERVICES: per node, handling time of its spans (receipt to last event).
	TRACES, per trace tag: traces and messages (avg, min - max), message tag
	  combinations, nodes and thread segments, processing (sum of segments),
	  wall delta (whole ms), duration.
	LOCKS: locking traces, successful and failed locks, acquire, fail and
	  hold times. INTERCEPTORS: self time per Command@Interceptor.
	INPUTS: per node its file, node number and clock offset; nodes without
	  input (numbers seen in message IDs); incomplete traces, unfinished
	  spans (open when recording stopped: kept, marked); clock
	  inconsistencies; damage (file, chunk, byte offset).

--json writes any report as JSON: camelCase keys, units in the names
(durationNs, meanLatencyNs, wallNs; distributions as count, meanNs, minNs,
p50Ns, p90Ns, p99Ns, maxNs). A progress bar is shown on standard error when
it is a terminal, or with --progress: the first pass's share of the
inputs' bytes read, then the merge's of their events. Damaged inputs (a truncated or corrupt recording) are
used up to the damage and from the next intact chunk on; every damage is
reported on standard error and in INPUTS, and the exit status is then 1,
after the results. Inputs without flow events, two inputs with one node
number and two nodes in one recording are refused.

--mem SIZE (256MiB, 1GiB, 100m or bytes; 0 for none) is the memory
budget, for the process's resident memory. Go's garbage collector keeps
its memory under the budget less a sixteenth (at most 32 MiB, for the
program's own pages), collecting more often as the heap nears it, and an
eighth of the budget is for the per-message arrays (about 26 bytes a
message in the first pass, 20 in the merging one): their pages beyond
that spill to temporary files in $TMPDIR,
removed at once and read back as the merge reaches them. Without --mem
the collector keeps its default pace (or GOMEMLIMIT) and the arrays
keep 64 MiB in memory. Each input is decoded once:
the first pass writes the spans it reads to a temporary file per input
in $TMPDIR (some 55% of the recording's size; removed when the merge
ends) and the merging pass reads them back. A recording's reader holds
the spans of up to two chunks (a span's events can be written a chunk
after its end): past 1 MiB per recording they wait in a temporary file
in $TMPDIR too. A temporary file that cannot be created or written is an
error naming it and the system's error; with --mem 0 the held spans stay
in memory instead, with a warning. Not spilled: the chunk being decoded (12 MiB per
recording by default) and the message ID table (12 bytes a message
with dense counters); a merge that needs more than the budget goes on,
with up to half its CPU time spent collecting garbage.`,
	SetFlags: func(fs *flag.FlagSet) {
		fs.Bool("json", false, "write the report as JSON")
		fs.Bool("messages", false, "stats: the messages report")
		fs.Bool("traces", false, "stats: the traces report")
		fs.Bool("locks", false, "stats: the locks report")
		fs.Bool("interceptors", false, "stats: the interceptors report")
		fs.String("message", "", "cut: a message ID of the trace to cut")
		fs.String("out", "", "cut: the directory to write the span logs to")
		fs.String("tag", "", "traces: only traces with this trace or message tag")
		fs.String("node", "", "traces: only traces with a span on this node")
		fs.Duration("min-duration", 0, "traces: only traces lasting at least this long")
		fs.String("since", "", "traces: only traces starting at or after this RFC 3339 time")
		fs.String("until", "", "traces: only traces starting before this RFC 3339 time")
		fs.String("otlp", "", "export: the OTLP endpoint, http(s)://host:port[/path] or grpc://host:port")
		fs.Bool("progress", false, "show a progress bar on standard error even when it is not a terminal")
		fs.String("mem", "", "memory budget: the resident memory the merge keeps under (the garbage collector's limit, less a sixteenth for the program), an eighth of it for the per-message arrays, which spill to $TMPDIR past it (256MiB, 1GiB, 100m; 0 for none; default: the collector's own pace, 64MiB of arrays)")
	},
	Run: runFlow,
}

func flagBool(fs *flag.FlagSet, name string) bool {
	return fs.Lookup(name).Value.(flag.Getter).Get().(bool)
}

func flagString(fs *flag.FlagSet, name string) string { return fs.Lookup(name).Value.String() }

func runFlow(ctx context.Context, env *cli.Env, fs *flag.FlagSet, args []string) error {
	if len(args) == 0 {
		return cli.Usagef("expected traces, stats, cut or export")
	}
	sub, files := args[0], args[1:]
	if len(files) == 0 {
		return cli.Usagef("expected at least one input file")
	}
	asJSON := flagBool(fs, "json")
	reports := flow.Reports{
		Messages: flagBool(fs, "messages"), Traces: flagBool(fs, "traces"),
		Locks: flagBool(fs, "locks"), Interceptors: flagBool(fs, "interceptors"),
	}
	switch sub {
	case "traces", "cut", "export":
		if reports != (flow.Reports{}) {
			return cli.Usagef("--messages, --traces, --locks and --interceptors are flags of flow stats")
		}
	case "stats":
		if reports == (flow.Reports{}) {
			reports = flow.Reports{Messages: true, Traces: true, Locks: true, Interceptors: true}
		}
	default:
		return cli.Usagef("unknown flow command %q: expected traces, stats, cut or export", sub)
	}
	var filter flow.Filter
	filter.Tag, filter.Node = flagString(fs, "tag"), flagString(fs, "node")
	filter.MinDuration = int64(fs.Lookup("min-duration").Value.(flag.Getter).Get().(time.Duration))
	if filter.MinDuration < 0 {
		return cli.Usagef("--min-duration %v: want a duration of 0 or more", time.Duration(filter.MinDuration))
	}
	for _, b := range []struct {
		name string
		to   *int64
	}{{"since", &filter.Since}, {"until", &filter.Until}} {
		if v := flagString(fs, b.name); v != "" {
			// time.Parse's error quotes the layout's reference time
			// ("cannot parse "yesterday" as "2006""), not what is wanted.
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return cli.Usagef("--%s %q: want an RFC 3339 time, such as 2026-11-27T21:00:00Z or 2026-11-27T22:00:00.5+01:00", b.name, v)
			}
			*b.to = t.UnixNano()
		}
	}
	if sub != "traces" && sub != "export" && filter != (flow.Filter{}) {
		return cli.Usagef("--tag, --node, --min-duration, --since and --until are flags of flow traces and flow export")
	}
	endpoint := flagString(fs, "otlp")
	if (sub == "export") != (endpoint != "") {
		return cli.Usagef("flow export needs --otlp URL, a flag of flow export only")
	}
	var exporter *otlp.Exporter
	if sub == "export" {
		var err error
		if exporter, err = otlp.NewExporter(endpoint); err != nil {
			return cli.Usagef("%v", err)
		}
	}
	message, outDir := flagString(fs, "message"), flagString(fs, "out")
	if sub == "cut" && (message == "" || outDir == "") {
		return cli.Usagef("flow cut needs --message ID and --out DIR")
	}
	if sub != "cut" && (message != "" || outDir != "") {
		return cli.Usagef("--message and --out are flags of flow cut")
	}
	if sub == "cut" {
		// Before the merge, which may take long, rather than after it.
		if err := os.MkdirAll(outDir, 0o777); err != nil {
			return outputError("--out", outDir, err)
		}
	}
	prevLimit := debug.SetMemoryLimit(-1)
	budget, err := setMemoryBudget(fs)
	if err != nil {
		return err
	}
	defer debug.SetMemoryLimit(prevLimit)
	inputs := make([]flow.Input, len(files))
	for i, f := range files {
		inputs[i] = flow.FileInput(f)
	}
	// An eighth of the budget for the per-message arrays (the window of
	// messages in flight is a few pages of them) leaves the rest to the
	// chunks being decoded (12 MiB a recording), the message identities,
	// the open traces and the statistics, and room for the collector.
	opts := &flow.Options{MemBudget: budget / 8}
	if budget < 0 {
		opts.MemBudget = defaultArrayBudget
	}
	if bar := newProgressBar(env.Stderr, flagBool(fs, "progress")); bar != nil {
		opts.Progress = bar.update
		defer bar.done()
	}
	out := bufio.NewWriterSize(env.Stdout, 1<<16)
	var fn func(*flow.Trace) error
	var stats *flow.Stats
	var cutFiles []string
	found := false
	first := true
	switch sub {
	case "traces":
		if asJSON {
			out.WriteString(`{"traces":[`)
		}
		fn = func(t *flow.Trace) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if !filter.Match(t) {
				return nil
			}
			if !asJSON {
				return flow.WriteTrace(out, t)
			}
			b, err := json.Marshal(t.JSON())
			if err != nil {
				return err
			}
			if !first {
				out.WriteString(",\n")
			}
			first = false
			_, err = out.Write(b)
			return err
		}
	case "stats":
		stats = flow.NewStats()
		fn = func(t *flow.Trace) error {
			stats.Add(t)
			return ctx.Err()
		}
	case "export":
		fn = func(t *flow.Trace) error {
			if !filter.Match(t) {
				return ctx.Err()
			}
			return exporter.Add(ctx, t)
		}
	case "cut":
		fn = func(t *flow.Trace) error {
			if found {
				return ctx.Err()
			}
			for _, k := range t.Messages {
				if t.MessageID(k) == message {
					found = true
					var err error
					if cutFiles, err = flow.Cut(t, outDir); err != nil {
						return outputError("--out", outDir, err)
					}
					return nil
				}
			}
			return ctx.Err()
		}
	}
	m, err := flow.Merge(inputs, opts, fn)
	if err != nil {
		return err
	}
	switch sub {
	case "traces":
		if asJSON {
			out.WriteString("],\n\"inputs\":")
			tail, err := json.Marshal(m.Inputs())
			if err != nil {
				return err
			}
			out.Write(tail)
			out.WriteString("}\n")
		} else if err := m.WriteInputs(out); err != nil {
			return err
		}
	case "stats":
		if asJSON {
			doc := stats.JSON(reports)
			in := m.Inputs()
			doc.Inputs = &in
			b, err := json.MarshalIndent(doc, "", "  ")
			if err != nil {
				return err
			}
			out.Write(b)
			out.WriteString("\n")
		} else {
			if err := stats.WriteText(out, reports); err != nil {
				return err
			}
			if err := m.WriteInputs(out); err != nil {
				return err
			}
		}
	case "export":
		if err := exporter.Close(ctx); err != nil {
			return err
		}
		fmt.Fprintf(out, "exported %d traces, %d spans to %s\n", exporter.Traces, exporter.Spans, endpoint)
		if err := m.WriteInputs(out); err != nil {
			return err
		}
	case "cut":
		if !found {
			return fmt.Errorf("message %s is in no trace", message)
		}
		if asJSON {
			b, _ := json.Marshal(map[string]any{"files": cutFiles})
			out.Write(b)
			out.WriteString("\n")
		} else {
			for _, f := range cutFiles {
				fmt.Fprintln(out, f)
			}
		}
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if m.IncompleteTraces > 0 && !asJSON {
		fmt.Fprintf(env.Stderr, "%d traces are incomplete: spans of their messages are missing from the inputs\n", m.IncompleteTraces)
	}
	if m.Warnings > 0 {
		fmt.Fprintf(env.Stderr, "skipped %d malformed lines or records\n", m.Warnings)
	}
	if m.MemoryWarning != nil {
		fmt.Fprintf(env.Stderr, "warning: %v\n", m.MemoryWarning)
	}
	if len(m.Errors) > 0 {
		var msgs []string
		for _, e := range m.Errors {
			msgs = append(msgs, e.Error())
		}
		return errors.New(strings.Join(msgs, "\n"))
	}
	return nil
}

// defaultArrayBudget is what the per-message arrays keep in memory
// without --mem: ten million messages take 260 MB in them, the window of
// messages in flight a few MiB.
const defaultArrayBudget = 64 << 20

// setMemoryBudget sets the garbage collector's soft memory limit from
// --mem and returns the budget, 0 for none, -1 for the default: no limit
// but GOMEMLIMIT's, the collector's default pace. A limit below what the
// merge holds (README, Scale) makes the collector run all the time.
func setMemoryBudget(fs *flag.FlagSet) (int64, error) {
	v := flagString(fs, "mem")
	if v == "" {
		return -1, nil
	}
	n, err := parseMemSize(v)
	if err != nil {
		return 0, cli.Usagef("--mem: %v", err)
	}
	if n == 0 {
		debug.SetMemoryLimit(math.MaxInt64)
		return 0, nil
	}
	debug.SetMemoryLimit(heapLimit(n))
	return n, nil
}

// heapLimit is the collector's limit for a budget of n bytes of resident
// memory. The limit counts what the Go runtime maps, not the program's
// text and data pages, which the kernel counts in the resident set too
// (about 20 MiB for this command): a sixteenth of the budget, at most 32
// MiB, is left for them, so that --mem 512MiB stays under 512 MiB of RSS.
func heapLimit(n int64) int64 { return n - min(n/16, 32<<20) }

// parseMemSize reads a size in bytes with an IEC suffix (KiB, MiB, GiB,
// TiB) or as the JVM's options write it (500k, 100m, 1g, bytes).
func parseMemSize(v string) (int64, error) {
	for i, unit := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if num, ok := strings.CutSuffix(v, unit); ok {
			n, err := strconv.ParseInt(num, 10, 64)
			shift := 10 * (i + 1)
			if err != nil || n < 0 || n > math.MaxInt64>>shift {
				return 0, fmt.Errorf("bad size %q (want e.g. 512MiB, 1GiB)", v)
			}
			return n << shift, nil
		}
	}
	if v == "" {
		return 0, fmt.Errorf("empty size (want e.g. 512MiB, 1GiB)")
	}
	return ctlproto.ParseSize(v)
}

// progressBar draws the merge's progress on a terminal, at most ten times
// a second.
type progressBar struct {
	w     io.Writer
	last  time.Time
	shown bool
}

// newProgressBar returns nil unless w is a terminal (a bar in a log file
// or a pipe is noise) or force is set.
func newProgressBar(w io.Writer, force bool) *progressBar {
	if force {
		return &progressBar{w: w}
	}
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return &progressBar{w: w}
}

func (p *progressBar) update(pass int, done, total int64) {
	now := time.Now()
	if now.Sub(p.last) < 100*time.Millisecond && done < total {
		return
	}
	p.last = now
	p.shown = true
	unit, div := "events", int64(1)
	if pass == 1 {
		unit, div = "MiB read", 1<<20
	}
	if total < 0 {
		// An input of unknown size (a pipe): no share to show.
		fmt.Fprintf(p.w, "\r[pass 1/2] %d %s", done/div, unit)
		return
	}
	frac := 1.0
	if total > 0 {
		frac = min(float64(done)/float64(total), 1)
	}
	const width = 40
	n := int(frac * width)
	fmt.Fprintf(p.w, "\r[pass %d/2] [%s%s] %3.0f%% %d/%d %s", pass, strings.Repeat("#", n), strings.Repeat(" ", width-n), 100*frac, done/div, total/div, unit)
}

func (p *progressBar) done() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
