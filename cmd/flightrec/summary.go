package main

import (
	"context"
	"flag"
	"runtime"

	"github.com/flightrec/flightrec/internal/cli"
	"github.com/flightrec/flightrec/internal/jfrtool"
	"github.com/flightrec/flightrec/jfr"
)

var summaryCmd = &cli.Command{
	Name:      "summary",
	UsageLine: "summary FILE",
	Short:     "print the chunks, duration and event counts of a recording",
	Long: `
Summary prints what 'jfr summary' prints: the format version, the number of
chunks, the start time and duration, and for every event type the number of
events and their size in bytes, most frequent first. The metadata and
constant-pool records are counted as jdk.Metadata and jdk.CheckPoint.

If the file is truncated or corrupt, the summary of the complete chunks is
printed, then an error naming the chunk and byte offset, and the exit
status is 1.`,
	Run: func(ctx context.Context, env *cli.Env, fs *flag.FlagSet, args []string) error {
		if len(args) != 1 {
			return cli.Usagef("expected one recording file, got %d arguments", len(args))
		}
		// Like jfr summary, read only the chunk headers, the metadata and
		// the records' types and sizes: a regular file through pread, its
		// chunks in parallel; anything else (a pipe, a .gz) as a stream.
		var s *jfrtool.Summary
		var rerr error
		if f, size, ok := openPlainFile(args[0]); ok {
			defer f.Close()
			s, rerr = jfrtool.SummarizeAt(f, size, runtime.GOMAXPROCS(0))
			rerr = fileError(args[0], rerr)
		} else {
			rec, err := openRecordingWith(args[0], &jfr.ReaderOptions{SkipConstantPools: true})
			if err != nil {
				return err
			}
			defer rec.Close()
			rerr = rec.read(func() (err error) {
				s, err = jfrtool.Summarize(rec.Reader)
				return err
			})
		}
		if s != nil && (s.Chunks > 0 || rerr == nil) {
			if err := s.WriteText(env.Stdout); err != nil {
				return err
			}
		}
		return rerr
	},
}
