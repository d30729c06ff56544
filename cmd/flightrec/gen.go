package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"

	"github.com/flightrec/flightrec/internal/cli"
	"github.com/flightrec/flightrec/internal/eventgen"
)

var genCmd = &cli.Command{
	Name:      "gen",
	UsageLine: "gen -type T[,U...] [DIR]",
	Short:     "write fast Commit methods for event structs (go generate)",
	Long: `
Gen writes, for the event structs named by -type (types that embed
event.Instant or event.Timed), a Commit method each that encodes the
type's fields with code written for them. It shadows the Commit of the
embedded Instant or Timed, records the same events, and costs about a
tenth less per event. Generation is optional: a type without it records
through the generic Commit.

Gen loads the Go package in DIR (default: the current directory), tests
included, and writes T_flightrec.go there (T_flightrec_test.go if a type is
declared in a test file), T being the first type in lower case. Put a line
like this next to the types and run go generate:

	//go:generate go run github.com/flightrec/flightrec/cmd/flightrec gen -type HTTPRequest

The generated file checks at program start that the types still have the
fields it was written for, and panics if not: run go generate after
changing an event struct.`,
	SetFlags: func(fs *flag.FlagSet) {
		fs.String("type", "", "comma-separated `names` of the event structs")
	},
	Run: func(ctx context.Context, env *cli.Env, fs *flag.FlagSet, args []string) error {
		typeList := fs.Lookup("type").Value.String()
		if typeList == "" {
			return cli.Usagef("-type is required")
		}
		if len(args) > 1 {
			return cli.Usagef("expected at most one directory, got %d arguments", len(args))
		}
		dir := "."
		if len(args) == 1 {
			dir = args[0]
		}
		f, err := eventgen.Generate(dir, strings.Split(typeList, ","), "-type "+typeList)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(f.Dir, f.Name), f.Source, 0o644)
	},
}
