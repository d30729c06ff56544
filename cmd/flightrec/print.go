package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/flightrec/flightrec/internal/cli"
	"github.com/flightrec/flightrec/internal/gzipped"
	"github.com/flightrec/flightrec/internal/jfrtool"
	"github.com/flightrec/flightrec/jfr"
)

var printCmd = &cli.Command{
	Name:      "print",
	UsageLine: "print [--json] [--events FILTER] [--categories FILTER] [--stack-depth N] [--follow] FILE",
	Short:     "print the events of a recording as jfr print does",
	Long: `
Print writes every event of a recording, with all its fields, in the human
format of 'jfr print' or, with --json, in the JSON of 'jfr print --json'.
The output is byte for byte what jfr 17 writes: chunk by chunk, a chunk's
events sorted by end time; constants (threads, stack traces, classes) are
expanded in full in JSON and summarised in the human format.

--events and --categories select event types by comma-separated,
case-sensitive globs (* and ?). An event name matches with or without its
package (CPULoad, jdk.CPULoad, CPU*); a category matches by name or, for
names with spaces, by acronym (JVM for Java Virtual Machine). A type
selected by either option is printed.

--stack-depth sets how many frames of each stack trace are printed
(default 5).

--follow prints a recording while it is being written: each chunk, and
each flush of a chunk in progress, as it reaches the file, until the
recording ends (a final chunk that stays the file's last for 2 s) or the
command is interrupted. With --json it prints one JSON object per event
and line, as a stream has no end to close a document at.

If the file is truncated or corrupt, the events of the complete chunks are
printed, then an error naming the chunk and byte offset, and the exit
status is 1.`,
	SetFlags: func(fs *flag.FlagSet) {
		fs.Bool("json", false, "print in JSON")
		fs.String("events", "", "print only events whose name matches one of the comma-separated `globs`")
		fs.String("categories", "", "print only events with a category matching one of the comma-separated `globs`")
		fs.Int("stack-depth", 5, "print at most `N` frames of each stack trace")
		fs.Bool("follow", false, "print the recording as it is written, until it ends or is interrupted")
	},
	Run: func(ctx context.Context, env *cli.Env, fs *flag.FlagSet, args []string) error {
		if len(args) != 1 {
			return cli.Usagef("expected one recording file, got %d arguments", len(args))
		}
		opts := jfrtool.PrintOptions{
			Events:     fs.Lookup("events").Value.String(),
			Categories: fs.Lookup("categories").Value.String(),
			StackDepth: fs.Lookup("stack-depth").Value.(flag.Getter).Get().(int),
		}
		if opts.StackDepth < 0 {
			return cli.Usagef("--stack-depth %d: want 0 or more", opts.StackDepth)
		}
		format := jfrtool.FormatPretty
		if fs.Lookup("json").Value.(flag.Getter).Get().(bool) {
			format = jfrtool.FormatJSON
		}
		if fs.Lookup("follow").Value.String() == "true" {
			return printFollow(ctx, env, args[0], format, opts)
		}
		rec, err := openRecording(args[0])
		if err != nil {
			return err
		}
		defer rec.Close()
		return rec.read(func() error { return jfrtool.Print(env.Stdout, rec.Reader, format, opts) })
	},
}

// printFollow prints each flushed part of a recording being written.
func printFollow(ctx context.Context, env *cli.Env, name string, format jfrtool.Format, opts jfrtool.PrintOptions) error {
	if format == jfrtool.FormatJSON {
		format = jfrtool.FormatJSONLines
	}
	if f, err := os.Open(name); err == nil {
		// A recording being written is not gzip-compressed.
		var head [2]byte
		n, _ := io.ReadFull(f, head[:])
		f.Close()
		if gzipped.Is(head[:n]) {
			return fmt.Errorf("%s: --follow reads a recording as it is written, uncompressed: print a .gz file without it", name)
		}
	}
	err := jfr.Follow(ctx, name, nil, func(r *jfr.Reader) error {
		return jfrtool.Print(env.Stdout, r, format, opts)
	})
	if ctx.Err() != nil {
		return nil // interrupted
	}
	return fileError(name, err)
}
