package cli

import (
	"bytes"
	"context"
	"flag"
	"strings"
	"testing"
)

// testCommand records the flags and arguments its Run gets.
func testCommand(got *string) *Command {
	return &Command{
		Name:      "cmd",
		UsageLine: "cmd [--out FILE] [--json] FILE...",
		SetFlags: func(fs *flag.FlagSet) {
			fs.String("out", "", "output `FILE`")
			fs.Bool("json", false, "JSON")
			fs.Duration("wait", 0, "a duration")
			fs.Int("n", 0, "a number")
		},
		Run: func(ctx context.Context, env *Env, fs *flag.FlagSet, args []string) error {
			*got = fs.Lookup("out").Value.String() + " " + fs.Lookup("json").Value.String() + " " + strings.Join(args, ",")
			return nil
		},
	}
}

func TestMainFlags(t *testing.T) {
	for _, c := range []struct {
		args   []string
		status int
		got    string // out, json, arguments
		stderr string
	}{
		{[]string{"cmd", "a", "--out", "o", "b"}, 0, "o false a,b", ""},
		{[]string{"cmd", "--json", "a", "--out=o"}, 0, "o true a", ""},
		{[]string{"cmd", "a", "--", "--out", "o"}, 0, " false a,--out,o", ""},
		// A flag that needs a value and ends the line is a usage error,
		// not a flag whose value is the "--" put before the arguments.
		{[]string{"cmd", "a", "--out"}, 2, "", "flag needs an argument: -out"},
		{[]string{"cmd", "--out"}, 2, "", "flag needs an argument: -out"},
		{[]string{"cmd", "a", "--bogus"}, 2, "", "prog cmd: flag provided but not defined: -bogus\nusage: prog cmd "},
		// A value its flag cannot parse: what the flag wants.
		{[]string{"cmd", "--wait", "5", "a"}, 2, "", "prog cmd: --wait \"5\": want a duration such as 300ms, 1.5s or 2m\nusage: prog cmd "},
		{[]string{"cmd", "--n", "x", "a"}, 2, "", "prog cmd: --n \"x\": want a whole number\n"},
		// A negative number is an argument, for the command to judge.
		{[]string{"cmd", "-5", "a"}, 0, " false -5,a", ""},
		{[]string{"cmd", "--out", "-5", "a"}, 0, "-5 false a", ""},
	} {
		var got string
		var stdout, stderr bytes.Buffer
		env := &Env{Program: "prog", Stdout: &stdout, Stderr: &stderr}
		status := Main(context.Background(), env, []*Command{testCommand(&got)}, c.args)
		if status != c.status || got != c.got || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("%q: status %d, Run got %q, stderr %q; want %d, %q, %q", c.args, status, got, stderr.String(), c.status, c.got, c.stderr)
		}
	}
}

// TestMainHelpFlag: -h prints the command's help on stdout and nothing on
// stderr; the flag package's short usage, printed before it, repeated the
// flags and said to run 'help' for the details printed after it.
func TestMainHelpFlag(t *testing.T) {
	for _, args := range [][]string{{"cmd", "-h"}, {"cmd", "a", "--help"}} {
		var got string
		var stdout, stderr bytes.Buffer
		env := &Env{Program: "prog", Stdout: &stdout, Stderr: &stderr}
		status := Main(context.Background(), env, []*Command{testCommand(&got)}, args)
		if status != 0 || stderr.Len() != 0 || !strings.HasPrefix(stdout.String(), "usage: prog cmd [--out FILE]") || got != "" {
			t.Errorf("%q: status %d, stdout %q, stderr %q, Run got %q; want 0, the help, nothing, nothing", args, status, stdout.String(), stderr.String(), got)
		}
	}
}
