// Package cli is the small command framework behind cmd/flightrec: one
// flag.FlagSet per subcommand, usage and help rendering, and the exit-status
// conventions of the Go tools (0 success, 1 failure, 2 usage error).
package cli
