// Package agent lets `flightrec ctl` control a running Go program from
// outside, as jcmd's JFR commands control a JVM: start, check, configure,
// dump and stop recordings, and stream events live.
//
// A program opts in with one line in main, as with gops' agent or
// net/http/pprof:
//
//	if err := agent.Listen(agent.Options{}); err != nil {
//		log.Print(err)
//	}
//	defer agent.Close() // dumps and stops the agent's recordings, removes the socket
//
// Listen opens a Unix socket at
// filepath.Join(os.TempDir(), "flightrec-<uid>", "<pid>.sock") (directory
// 0700, socket 0600) and serves requests on it. Only the socket's owner and
// root may connect: the agent checks each peer's uid (SO_PEERCRED) and
// refuses others. Requests are small, read within a time limit, and a
// malformed one gets an error reply or a closed connection; the service
// and its other clients go on.
//
// Paths named in requests (--filename, a .jfc settings file) are opened
// and written by the service, with the service's permissions: whoever may
// control the service may write files as it.
//
// If the environment variable FLIGHTREC_START is set, Listen also starts a
// recording from it, with the JVM's -XX:StartFlightRecording syntax:
//
//	FLIGHTREC_START=name=app,settings=profile,maxage=10m,disk=true,dumponexit=true,filename=/var/tmp/app.jfr
//
// with the options name, filename, settings (default, profile or a .jfc
// file), duration, maxsize, maxage, disk and dumponexit. A recording with
// a filename and no maxsize or maxage writes that file as it goes;
// otherwise it keeps the last maxsize/maxage (default 64 MB) in memory and
// writes it to filename when it stops (after duration, or by `ctl stop`).
// disk=true also keeps its chunks as files in a disk repository, so a
// process killed with kill -9 leaves all but about its last second: in a
// directory under FLIGHTREC_REPOSITORY (default os.TempDir()) named
// <time>_<pid>_<name>, which `flightrec assemble` joins into a recording.
// dumponexit=true (or Options.DumpOnExit for every in-memory recording)
// writes the recording when the program exits: at Close, and on SIGTERM or
// SIGINT, after which the agent ends the process as the signal would.
package agent
