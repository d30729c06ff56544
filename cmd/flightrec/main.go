// Command flightrec records and reads JDK Flight Recorder files.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/flightrec/flightrec/internal/cli"
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

func commands() []*cli.Command {
	return []*cli.Command{summaryCmd, printCmd, metadataCmd}
}
