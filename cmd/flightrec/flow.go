package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/flightrec/flightrec/analysis/flow"
	"github.com/flightrec/flightrec/internal/cli"
)

var flowCmd = &cli.Command{
	Name:      "flow",
	UsageLine: "flow traces|stats|cut [flags] FILES...",
	Short:     "merge the message flow of several nodes into traces and statistics",
	Long: `
Flow reads one input per node, each a flightrec recording with flow events
or a message-flow-tracer 2013 text span log (the node name comes from the
recording, else from the file name without its extension), and merges them
into traces: the spans connected through message IDs, one per request or
timer-triggered operation, in causal order (a send before its receipt; a
node's own events by its monotonic clock; then wall time corrected by the
clock offsets estimated from the message pairs).

	flow traces FILES...
		the trace log, in message-flow-tracer's layout
	flow stats [--messages] [--traces] [--locks] [--interceptors] FILES...
		the statistics (all four reports unless some are chosen)
	flow cut --message ID --out DIR FILES...
		the span logs of that message's trace, DIR/<node>.txt, which
		merge again to the same trace

--json writes any report as JSON. While merging, a progress bar is shown on
standard error when it is a terminal. Inputs that cannot be read are
reported and count as finished; the exit status is then 1.`,
	SetFlags: func(fs *flag.FlagSet) {
		fs.Bool("json", false, "write the report as JSON")
		fs.Bool("messages", false, "stats: the messages report")
		fs.Bool("traces", false, "stats: the traces report")
		fs.Bool("locks", false, "stats: the locks report")
		fs.Bool("interceptors", false, "stats: the interceptors report")
		fs.String("message", "", "cut: a message ID of the trace to cut")
		fs.String("out", "", "cut: the directory to write the span logs to")
	},
	Run: runFlow,
}

func flagBool(fs *flag.FlagSet, name string) bool {
	return fs.Lookup(name).Value.(flag.Getter).Get().(bool)
}

func flagString(fs *flag.FlagSet, name string) string { return fs.Lookup(name).Value.String() }

func runFlow(ctx context.Context, env *cli.Env, fs *flag.FlagSet, args []string) error {
	if len(args) == 0 {
		return cli.Usagef("expected traces, stats or cut")
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
	case "traces", "cut":
		if reports != (flow.Reports{}) {
			return cli.Usagef("--messages, --traces, --locks and --interceptors are flags of flow stats")
		}
	case "stats":
		if reports == (flow.Reports{}) {
			reports = flow.Reports{Messages: true, Traces: true, Locks: true, Interceptors: true}
		}
	default:
		return cli.Usagef("unknown flow command %q: expected traces, stats or cut", sub)
	}
	message, outDir := flagString(fs, "message"), flagString(fs, "out")
	if sub == "cut" && (message == "" || outDir == "") {
		return cli.Usagef("flow cut needs --message ID and --out DIR")
	}
	if sub != "cut" && (message != "" || outDir != "") {
		return cli.Usagef("--message and --out are flags of flow cut")
	}
	inputs := make([]flow.Input, len(files))
	for i, f := range files {
		inputs[i] = flow.FileInput(f)
	}
	opts := &flow.Options{}
	if bar := newProgressBar(env.Stderr); bar != nil {
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
	case "cut":
		fn = func(t *flow.Trace) error {
			if found {
				return ctx.Err()
			}
			for _, k := range t.Messages {
				if t.MessageID(k) == message {
					found = true
					var err error
					cutFiles, err = flow.Cut(t, outDir)
					return err
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
	if len(m.Errors) > 0 {
		var msgs []string
		for _, e := range m.Errors {
			msgs = append(msgs, e.Error())
		}
		return errors.New(strings.Join(msgs, "\n"))
	}
	return nil
}

// progressBar draws the merge's progress on a terminal, at most ten times
// a second.
type progressBar struct {
	w     io.Writer
	last  time.Time
	shown bool
}

// newProgressBar returns nil unless w is a terminal: a bar in a log file
// or a pipe is noise.
func newProgressBar(w io.Writer) *progressBar {
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

func (p *progressBar) update(done, total int64) {
	now := time.Now()
	if now.Sub(p.last) < 100*time.Millisecond && done < total {
		return
	}
	p.last = now
	frac := 1.0
	if total > 0 {
		frac = min(float64(done)/float64(total), 1)
	}
	const width = 40
	n := int(frac * width)
	fmt.Fprintf(p.w, "\r[%s%s] %3.0f%% %d/%d events", strings.Repeat("#", n), strings.Repeat(" ", width-n), 100*frac, done, total)
	p.shown = true
}

func (p *progressBar) done() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
