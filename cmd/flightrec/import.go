package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/flightrec/flightrec/internal/cli"
	"github.com/flightrec/flightrec/internal/gotrace"
)

var importCmd = &cli.Command{
	Name:      "import",
	UsageLine: "import [--threshold D] TRACE OUT",
	Short:     "convert a Go execution trace into a recording of JDK events",
	Long: `
Import converts a Go execution trace (from runtime/trace, 'go test -trace'
or /debug/pprof/trace, Go 1.22 or later) into the recording OUT, one chunk
per trace generation (about a second), with OpenJDK 17's event layouts:

  jdk.JavaMonitorEnter    a goroutine blocked locking a sync.Mutex or
                          sync.RWMutex; previousOwner is the goroutine that
                          unlocked it; address is 0 (the trace does not say
                          which lock)
  jdk.JavaMonitorWait     sync.Cond.Wait; notifier is the goroutine that
                          signalled
  jdk.ThreadPark          channel send or receive, select, sync.WaitGroup,
                          other semaphores (parkedClass chan, select,
                          sync.WaitGroup or null)
  jdk.ThreadSleep         time.Sleep, with the time slept
  jdk.ExecuteVMOperation, jdk.SafepointBegin, jdk.SafepointEnd
                          each stop-the-world, with its reason
  jdk.GarbageCollection, jdk.GCPhasePause
                          GC cycles (cause System.gc() for runtime.GC) and
                          their stop-the-world pauses
  jdk.ExecutionSample     the trace's CPU samples (when the CPU profiler
                          ran), on their goroutine
  go.MarkAssist, go.NetworkWait
                          what has no JDK twin

Goroutines are the threads, named after their start function and id.
Waits shorter than --threshold (default 10ms, as the JDK's profile
settings) are left out. A file that is not a Go trace, or a truncated one,
is an error naming the file and where reading stopped; OUT is then not
written.`,
	SetFlags: func(fs *flag.FlagSet) {
		fs.Duration("threshold", gotrace.DefaultThreshold, "leave out waits shorter than this")
	},
	Run: func(ctx context.Context, env *cli.Env, fs *flag.FlagSet, args []string) error {
		if len(args) != 2 {
			return cli.Usagef("expected a trace file and an output file, got %d arguments", len(args))
		}
		return importTrace(args[0], args[1], fs.Lookup("threshold").Value.(flag.Getter).Get().(time.Duration))
	},
}

func importTrace(in, out string, threshold time.Duration) error {
	if threshold < 0 {
		return cli.Usagef("--threshold %v is negative", threshold)
	}
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	tmp, err := os.CreateTemp(filepath.Dir(out), filepath.Base(out)+".*.tmp")
	if err != nil {
		return outputError("output", out, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	o := gotrace.Options{Thresholds: map[gotrace.Kind]time.Duration{}}
	for k := gotrace.Kind(0); k < gotrace.NumKinds; k++ {
		if k.Blocking() {
			o.Thresholds[k] = threshold
		}
	}
	if st, err := f.Stat(); err == nil {
		o.Anchor = st.ModTime() // for traces before Go 1.25, which carry no wall clock
	}
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err := gotrace.Convert(bufio.NewReaderSize(f, 1<<20), bw, o); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", in, err)
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return outputError("output", out, err)
	}
	if err := tmp.Close(); err != nil {
		return outputError("output", out, err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return outputError("output", out, err)
	}
	return nil
}
