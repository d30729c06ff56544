//go:build !linux

package main

import (
	"context"
	"errors"
	"flag"

	"github.com/flightrec/flightrec/internal/cli"
)

// probeCmd explains that dynamic probes need Linux (eBPF uprobes).
var probeCmd = &cli.Command{
	Name:      "probe",
	UsageLine: "probe [flags] -p PID FUNC...",
	Short:     "count and time calls of a running Go program with eBPF uprobes (Linux only)",
	Long: `
Probe attaches eBPF uprobes to a running Go program. It needs Linux.`,
	Run: func(context.Context, *cli.Env, *flag.FlagSet, []string) error {
		return errors.New("dynamic probes need Linux (eBPF uprobes)")
	},
}
