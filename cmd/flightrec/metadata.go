package main

import (
	"context"
	"flag"

	"github.com/flightrec/flightrec/internal/cli"
	"github.com/flightrec/flightrec/internal/jfrtool"
)

var metadataCmd = &cli.Command{
	Name:      "metadata",
	UsageLine: "metadata [--events FILTER] [--categories FILTER] FILE",
	Short:     "print the type declarations of a recording as jfr metadata does",
	Long: `
Metadata prints every type declared in the recording's metadata (events,
constant-pool types, annotations, settings and primitives, from all chunks)
as Java-like class declarations with their annotations, in the layout and
order of 'jfr metadata FILE'.

--events and --categories limit the output to the event types they select
(same globs as for print).

If the file is truncated or corrupt, the types of the complete chunks are
printed, then an error naming the chunk and byte offset, and the exit
status is 1.`,
	SetFlags: func(fs *flag.FlagSet) {
		fs.String("events", "", "print only event types whose name matches one of the comma-separated `globs`")
		fs.String("categories", "", "print only event types with a category matching one of the comma-separated `globs`")
	},
	Run: func(ctx context.Context, env *cli.Env, fs *flag.FlagSet, args []string) error {
		if len(args) != 1 {
			return cli.Usagef("expected one recording file, got %d arguments", len(args))
		}
		rec, err := openRecording(args[0])
		if err != nil {
			return err
		}
		defer rec.Close()
		opts := jfrtool.MetadataOptions{
			Events:     fs.Lookup("events").Value.String(),
			Categories: fs.Lookup("categories").Value.String(),
		}
		return rec.read(func() error { return jfrtool.PrintMetadata(env.Stdout, rec.Reader, opts) })
	},
}
