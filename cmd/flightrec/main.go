package main

import (
	"context"
	"flag"
	"os"
	"os/signal"

	"github.com/flightrec/flightrec/internal/cli"
	"github.com/flightrec/flightrec/internal/mmapfile"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr *os.File) int {
	env := &cli.Env{Program: "flightrec", Stdout: stdout, Stderr: stderr}
	return cli.Main(ctx, env, commands(), args)
}

// guarded makes a command report a memory fault, which a memory-mapped
// recording raises when the file shrinks while it is read, as an error.
func guarded(c *cli.Command) *cli.Command {
	run := c.Run
	g := *c
	g.Run = func(ctx context.Context, env *cli.Env, fs *flag.FlagSet, args []string) error {
		return mmapfile.Protect(func() error { return run(ctx, env, fs, args) })
	}
	return &g
}

func commands() []*cli.Command {
	cmds := []*cli.Command{summaryCmd, printCmd, metadataCmd, demoCmd, flowCmd, genCmd,
		probeCmd, exportCmd, viewCmd, ctlCmd, assembleCmd,
		importCmd,
	}
	for i, c := range cmds {
		cmds[i] = guarded(c)
	}
	return cmds
}
