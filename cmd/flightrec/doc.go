// Command flightrec records and reads JDK Flight Recorder files: the
// recordings that package recorder writes, and those of JVMs.
//
// Usage:
//
//	flightrec <command> [arguments]
//
// The commands are:
//
//	summary    print the chunks, duration and event counts of a recording
//	print      print the events of a recording as jfr print does
//	metadata   print the type declarations of a recording as jfr metadata does
//	demo       record a built-in instrumented workload to demo.jfr
//	flow       merge the message flow of several nodes into traces and statistics
//	gen        write fast Commit methods for event structs (go generate)
//	probe      count and time calls of a running Go program with eBPF uprobes
//	export     convert recordings to a pprof profile or a Perfetto trace
//	view       explore recordings in the browser
//	ctl        control the recordings of a running Go program (as jcmd PID JFR.*)
//	assemble   join the chunk files of a disk repository into one recording (as jfr assemble)
//	import     convert a Go execution trace into a recording of JDK events
//
// "flightrec help <command>" describes each command, its flags and its
// output. Each command's code is in a file of its name; the commands
// themselves parse flags and print, and the work is done by the
// project's packages (jfr, recorder, analysis/flow, internal/...).
package main
