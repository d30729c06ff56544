package main

import (
	"context"
	"flag"
	"io"
	"os"
	"strings"

	"github.com/flightrec/flightrec/analysis/flow"
	"github.com/flightrec/flightrec/export/perfetto"
	"github.com/flightrec/flightrec/export/pprof"
	"github.com/flightrec/flightrec/internal/cli"
	"github.com/flightrec/flightrec/jfr"
)

var exportCmd = &cli.Command{
	Name:      "export",
	UsageLine: "export pprof|perfetto [flags] FILE... -o OUT",
	Short:     "convert recordings to a pprof profile or a Perfetto trace",
	Long: `
Export converts recordings (any JVM's or flightrec's; several files make one
output) for other tools.

	export pprof [--type T]... [--weight FIELD] [--threads] FILE... -o OUT.pb.gz
		the stack traces of the events of type T (repeatable; default
		jdk.ExecutionSample and jdk.NativeMethodSample) as a gzipped pprof
		profile for 'go tool pprof': CPU samples as samples/count and
		cpu/nanoseconds (the period from the recording's settings),
		allocation samples as alloc_samples/count and alloc_space/bytes,
		lock and park events as contentions/count and delay/nanoseconds,
		other types as events/count (and duration/nanoseconds when timed).
		--weight adds the numeric field FIELD as the default sample type;
		--threads labels samples with their thread. Java frames are named
		package.Class.method, Go frames as recorded.

	export perfetto [--format proto|json] FILE... -o OUT
		a Perfetto trace (native protobuf, or Chrome JSON for Catapult and
		chrome://tracing): a process per recording, a track per thread or
		goroutine, timed events as slices, other events as instants,
		counters (CPU load, heap, thread counts, runtime metrics), and with
		flow events the messages as flow arrows between nodes, times
		corrected by the nodes' estimated clock offsets.`,
	SetFlags: func(fs *flag.FlagSet) {
		fs.Var(&stringList{}, "type", "pprof: an event type to include (repeatable)")
		fs.String("weight", "", "pprof: a numeric field to weigh samples by")
		fs.Bool("threads", false, "pprof: label samples with their thread")
		fs.String("format", "proto", "perfetto: proto or json")
		fs.String("o", "", "the output file (required)")
	},
	Run: runExport,
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runExport(ctx context.Context, env *cli.Env, fs *flag.FlagSet, args []string) error {
	if len(args) == 0 {
		return cli.Usagef("expected pprof or perfetto")
	}
	sub, files := args[0], args[1:]
	out := flagString(fs, "o")
	// The format first: "export FILE" is missing it, not a file.
	if sub != "pprof" && sub != "perfetto" {
		return cli.Usagef("unknown export format %q: expected pprof or perfetto", sub)
	}
	if len(files) == 0 {
		return cli.Usagef("expected at least one recording file")
	}
	if out == "" {
		return cli.Usagef("-o OUT is required")
	}
	if sub == "pprof" {
		if flagString(fs, "format") != "proto" {
			return cli.Usagef("--format is a flag of export perfetto")
		}
		return exportPprof(fs, files, out)
	}
	if len(*fs.Lookup("type").Value.(*stringList)) > 0 || flagString(fs, "weight") != "" || flagBool(fs, "threads") {
		return cli.Usagef("--type, --weight and --threads are flags of export pprof")
	}
	return exportPerfetto(fs, files, out)
}

// openAll opens recordings with each chunk on its own clock, as files from
// several processes (or a recording whose clock was re-based) need.
func openAll(files []string) ([]*recording, func(), error) {
	var recs []*recording
	closeAll := func() {
		for _, r := range recs {
			r.Close()
		}
	}
	for _, name := range files {
		r, err := openRecordingWith(name, &jfr.ReaderOptions{PerChunkClock: true})
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		recs = append(recs, r)
	}
	return recs, closeAll, nil
}

func exportPprof(fs *flag.FlagSet, files []string, out string) error {
	recs, closeAll, err := openAll(files)
	if err != nil {
		return err
	}
	defer closeAll()
	inputs := make([]pprof.Input, len(recs))
	for i, r := range recs {
		inputs[i] = pprof.Input{Name: r.name, Reader: r.Reader}
	}
	prof, err := pprof.Convert(inputs, pprof.Options{
		Types:   *fs.Lookup("type").Value.(*stringList),
		Weight:  flagString(fs, "weight"),
		Threads: flagBool(fs, "threads"),
	})
	if err != nil {
		return err
	}
	return writeFile(out, prof.Write)
}

// writeFile writes the -o file through write, removing it if that fails.
func writeFile(name string, write func(w io.Writer) error) (err error) {
	f, err := os.Create(name)
	if err != nil {
		return outputError("-o", name, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = outputError("-o", name, cerr)
		}
		if err != nil {
			os.Remove(name)
		}
	}()
	return write(f)
}

func exportPerfetto(fs *flag.FlagSet, files []string, out string) error {
	var format perfetto.Format
	switch f := flagString(fs, "format"); f {
	case "proto":
		format = perfetto.Proto
	case "json":
		format = perfetto.JSON
	default:
		return cli.Usagef("unknown --format %q: expected proto or json", f)
	}
	recs, closeAll, err := openAll(files)
	if err != nil {
		return err
	}
	defer closeAll()
	inputs := make([]perfetto.Input, len(recs))
	for i, r := range recs {
		fin := flow.FileInput(r.name)
		inputs[i] = perfetto.Input{Name: r.name, Reader: r.Reader, Flow: &fin}
	}
	return writeFile(out, func(w io.Writer) error {
		return perfetto.Write(w, inputs, perfetto.Options{Format: format})
	})
}
