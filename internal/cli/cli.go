package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// Command is one subcommand.
type Command struct {
	Name      string
	UsageLine string // e.g. "summary FILE"
	Short     string // one line for the command list
	Long      string // the help text
	// SetFlags declares the command's flags on fs; it may be nil.
	SetFlags func(fs *flag.FlagSet)
	// KeepDashDash keeps a "--" among the positional arguments Run gets,
	// for commands whose arguments continue with another command line.
	KeepDashDash bool
	// Run runs the command with its parsed flags and remaining arguments.
	Run func(ctx context.Context, env *Env, fs *flag.FlagSet, args []string) error
}

// Env is what a command sees of the process.
type Env struct {
	Program        string
	Stdout, Stderr io.Writer
}

// UsageError makes Main print the command's usage and exit with status 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// ExitError ends the program with the given status after Main has printed
// nothing more: the command has already reported what went wrong.
type ExitError struct{ Status int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Status) }

// Main runs the subcommand named by args[0] and returns the exit status.
func Main(ctx context.Context, env *Env, cmds []*Command, args []string) int {
	if len(args) == 0 {
		printUsage(env.Stderr, env.Program, cmds)
		return 2
	}
	name := args[0]
	if name == "help" || name == "-h" || name == "--help" || name == "-help" {
		if len(args) > 1 {
			if c := find(cmds, args[1]); c != nil {
				printHelp(env.Stdout, env.Program, c)
				return 0
			}
			fmt.Fprintf(env.Stderr, "%s help %s: unknown command\n", env.Program, args[1])
			return 2
		}
		printUsage(env.Stdout, env.Program, cmds)
		return 0
	}
	c := find(cmds, name)
	if c == nil {
		fmt.Fprintf(env.Stderr, "%s %s: unknown command\nRun '%s help' for usage.\n", env.Program, name, env.Program)
		return 2
	}
	fs := flag.NewFlagSet(env.Program+" "+c.Name, flag.ContinueOnError)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: %s %s\n", env.Program, c.UsageLine)
		if hasFlags(fs) {
			fs.PrintDefaults()
		}
		fmt.Fprintf(w, "Run '%s help %s' for details.\n", env.Program, c.Name)
	}
	if c.SetFlags != nil {
		c.SetFlags(fs)
	}
	// Parse prints the short usage for -h too, which the help printed
	// then repeats: it goes to stderr only for a bad flag.
	var parseOut bytes.Buffer
	fs.SetOutput(&parseOut)
	err := fs.Parse(interleave(fs, args[1:], c.KeepDashDash))
	fs.SetOutput(env.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(env.Stdout, env.Program, c)
			return 0
		}
		// The flag package's own message, with the usage it printed
		// after it, starts without the program's name.
		fmt.Fprintf(env.Stderr, "%s %s: %s\n", env.Program, c.Name, flagError(fs, err))
		fs.Usage()
		return 2
	}
	err = c.Run(ctx, env, fs, fs.Args())
	var ue *UsageError
	var ee *ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(env.Stderr, "%s %s: %s\n", env.Program, c.Name, ue.Msg)
		fs.Usage()
		return 2
	case errors.As(err, &ee):
		return ee.Status
	default:
		fmt.Fprintf(env.Stderr, "%s %s: %v\n", env.Program, c.Name, err)
		return 1
	}
}

// invalidValue matches the flag package's error for a value its flag
// cannot parse.
var invalidValue = regexp.MustCompile(`^invalid value (".*") for flag -([^:]+): parse error$`)

// flagError is the message for err, an error of fs.Parse. For a value the
// flag cannot parse, the flag package says "parse error"; this says what
// the flag wants, as the commands do for values they check themselves.
func flagError(fs *flag.FlagSet, err error) string {
	m := invalidValue.FindStringSubmatch(err.Error())
	if m == nil {
		return err.Error()
	}
	f := fs.Lookup(m[2])
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return err.Error()
	}
	var want string
	switch g.Get().(type) {
	case time.Duration:
		want = "a duration such as 300ms, 1.5s or 2m"
	case int, int64, uint, uint64:
		want = "a whole number"
	case float64:
		want = "a number"
	case bool:
		want = "true or false"
	default:
		return err.Error()
	}
	return fmt.Sprintf("--%s %s: want %s", m[2], m[1], want)
}

// interleave moves flags that follow positional arguments to the front, so
// `print FILE --json` works as `print --json FILE` does (as jfr allows).
// Everything after "--" stays positional.
func interleave(fs *flag.FlagSet, args []string, keepDashDash bool) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if keepDashDash {
				pos = append(pos, a)
			}
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' || isNegativeNumber(a) && fs.Lookup(a[1:]) == nil {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		// A non-boolean flag takes the next argument as its value.
		if f := fs.Lookup(name); f != nil && !isBool(f) {
			if i+1 == len(args) {
				// None follows: end with the flag, so that parsing says
				// its value is missing rather than take the "--" for it.
				return flags
			}
			i++
			flags = append(flags, args[i])
		}
	}
	return append(append(flags, "--"), pos...)
}

// isNegativeNumber tells whether a is "-" and digits: an argument, not a
// flag, so that the command can say what it wanted instead (ctl -5 check:
// a pid is positive) where the flag package said "flag provided but not
// defined: -5".
func isNegativeNumber(a string) bool {
	return len(a) > 1 && a[0] == '-' && strings.Trim(a[1:], "0123456789") == ""
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

func find(cmds []*Command, name string) *Command {
	for _, c := range cmds {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func printUsage(w io.Writer, prog string, cmds []*Command) {
	fmt.Fprintf(w, "%s records and reads JDK Flight Recorder files.\n\nUsage:\n\n\t%s <command> [arguments]\n\nThe commands are:\n\n", prog, prog)
	for _, c := range cmds {
		fmt.Fprintf(w, "\t%-10s %s\n", c.Name, c.Short)
	}
	fmt.Fprintf(w, "\nUse \"%s help <command>\" for more information about a command.\n", prog)
}

func printHelp(w io.Writer, prog string, c *Command) {
	fmt.Fprintf(w, "usage: %s %s\n\n%s\n", prog, c.UsageLine, strings.TrimSpace(c.Long))
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	if c.SetFlags != nil {
		c.SetFlags(fs)
	}
	if hasFlags(fs) {
		fmt.Fprintf(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}
