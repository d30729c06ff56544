package main

import (
	"context"
	"flag"

	"github.com/flightrec/flightrec/internal/cli"
	"github.com/flightrec/flightrec/internal/jfrtool"
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
		rec, err := openRecording(args[0])
		if err != nil {
			return err
		}
		defer rec.Close()
		s, rerr := jfrtool.Summarize(rec.Reader)
		if s.Chunks > 0 || rerr == nil {
			if err := s.WriteText(env.Stdout); err != nil {
				return err
			}
		}
		if rerr != nil {
			return rec.fileError(rerr)
		}
		return nil
	},
}
