package recorder

import (
	"fmt"
	"math"
	"os"
	"path"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/flightrec/flightrec/internal/spec"
	"github.com/flightrec/flightrec/jfr"
)

// System facts: what the JDK records of the JVM, the OS and the machine
// (jdk.JVMInformation, jdk.OSInformation...), filled with Go's own data.
// They cost nothing between chunks: the chunk builder writes the
// beginChunk facts in each chunk's first flushpoint and the endChunk facts
// in its last, as the JDK writes its events of period beginChunk and
// endChunk. Facts the platform cannot give (no /proc) are not declared.

// factTypeNames are the fact types this platform gives: the portable
// ones, and those of sysfacts_linux.go.
var factTypeNames = append([]string{"jdk.JVMInformation", "jdk.InitialEnvironmentVariable", "jdk.GCConfiguration", "jdk.GCHeapConfiguration"},
	osFactTypeNames...)

// factPeriods say when each fact type is written, in the JDK's words
// (jdk.ActiveSetting's period): at a chunk's start, its end, or both.
var factPeriods = map[string]string{
	"jdk.JVMInformation": "beginChunk", "jdk.OSInformation": "beginChunk", "jdk.CPUInformation": "beginChunk",
	"jdk.InitialEnvironmentVariable": "beginChunk", "jdk.GCConfiguration": "beginChunk", "jdk.GCHeapConfiguration": "beginChunk",
	"jdk.PhysicalMemory": "everyChunk", "jdk.ThreadContextSwitchRate": "endChunk", "jdk.SystemProcess": "endChunk",
}

// DefaultEnvRedaction are the patterns of the environment variables whose
// values jdk.InitialEnvironmentVariable leaves out unless WithEnvRedaction
// says otherwise: names that hold credentials by convention. The JDK
// writes every value; a recording is often shared more widely than the
// machine it was made on.
var DefaultEnvRedaction = []string{"*PASSWORD*", "*PASSWD*", "*SECRET*", "*TOKEN*", "*KEY*", "*CREDENTIAL*"}

// RedactedValue is what jdk.InitialEnvironmentVariable holds instead of a
// redacted variable's value.
const RedactedValue = "[redacted by flightrec]"

// WithEnvRedaction replaces DefaultEnvRedaction: the value of each
// environment variable whose name matches one of the patterns (path.Match
// globs, matched without regard to case) is written as RedactedValue.
// With no patterns every value is written, as the JDK does. While several
// recordings run, a value any of them redacts is redacted. To leave the
// variables out, disable jdk.InitialEnvironmentVariable.
func WithEnvRedaction(patterns ...string) Option {
	return optionFunc(func(c *config) { c.envRedaction = append([]string{}, patterns...) })
}

// checkEnvRedaction returns an error for a malformed pattern.
func checkEnvRedaction(patterns []string) error {
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("recorder: WithEnvRedaction: pattern %q: %w", p, err)
		}
	}
	return nil
}

// redacted tells whether the variable name matches one of patterns.
func redacted(name string, patterns []string) bool {
	name = strings.ToUpper(name)
	for _, p := range patterns {
		if ok, _ := path.Match(strings.ToUpper(p), name); ok {
			return true
		}
	}
	return false
}

// startedAt approximates the process's start where the OS does not say.
var startedAt = time.Now()

// sysFacts gathers the facts for the chunks of a session: what does not
// change once, the context-switch count at the last chunk's end.
type sysFacts struct {
	args      string
	startTime time.Time
	os        string
	cpu       cpuInfo
	cpuOK     bool

	switches     uint64 // context switches of the machine so far
	switchesAt   time.Time
	switchesRead bool
}

type cpuInfo struct {
	cpu, description        string
	sockets, cores, threads int
}

func newSysFacts() *sysFacts {
	sf := &sysFacts{args: strings.Join(os.Args, " "), startTime: processStart(), os: osVersion()}
	sf.cpu, sf.cpuOK = readCPUInfo()
	sf.switches, sf.switchesRead = contextSwitches()
	sf.switchesAt = time.Now()
	return sf
}

// factWriter writes one fact event (all its fields, startTime first).
type factWriter func(name string, vals ...jfr.Value)

// factsOn tells whether a fact type is enabled: facts of disabled types
// are not gathered at all.
type factsOn func(name string) bool

func long(n int64) jfr.Value  { return jfr.IntValue(jfr.KindLong, n) }
func integer(n int) jfr.Value { return jfr.IntValue(jfr.KindInt, int64(n)) }
func str(s string) jfr.Value  { return jfr.StringValue(s) }

// begin writes the facts of a chunk's start, at ticks.
func (sf *sysFacts) begin(ticks int64, redact []string, on factsOn, write factWriter) {
	now := long(ticks)
	gogc, limit, procs := goSettings()
	if on("jdk.JVMInformation") {
		write("jdk.JVMInformation", now, str("Go runtime"), str(runtime.Version()), str(""), str(sf.flags(gogc, limit, procs)), str(sf.args),
			long(sf.startTime.UnixMilli()), long(int64(os.Getpid())))
	}
	if sf.os != "" && on("jdk.OSInformation") {
		write("jdk.OSInformation", now, str(sf.os))
	}
	if sf.cpuOK && on("jdk.CPUInformation") {
		write("jdk.CPUInformation", now, str(sf.cpu.cpu), str(sf.cpu.description), integer(sf.cpu.sockets), integer(sf.cpu.cores), integer(sf.cpu.threads))
	}
	if on("jdk.InitialEnvironmentVariable") {
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			if redacted(k, redact) {
				v = RedactedValue
			}
			write("jdk.InitialEnvironmentVariable", now, str(k), str(v))
		}
	}
	// Go's collector is one concurrent mark-sweep collector, neither
	// generational nor parallel in the JDK's sense: stop-the-world work
	// runs on every P, and a quarter of them mark in the background (the
	// runtime's dedicated mark workers, rounded); idle Ps and assists
	// join, so the count is dynamic. runtime.GC runs a concurrent cycle.
	// Go has no pause goal (N/A, as the JDK writes it) or time ratio (0).
	if on("jdk.GCConfiguration") {
		write("jdk.GCConfiguration", now, jfr.RefValue(nil, spec.GCNameNone), jfr.RefValue(nil, spec.GCNameGo), integer(procs),
			integer(int(float64(procs)*0.25+0.5)), jfr.BoolValue(true), jfr.BoolValue(true), jfr.BoolValue(false), long(math.MinInt64), integer(0))
	}
	// maxSize is GOMEMLIMIT, a soft limit (math.MaxInt64: none); minSize
	// the runtime's smallest heap goal, 4 MiB scaled by GOGC; Go has no
	// initial heap size, compressed pointers or object header alignment
	// beyond its 8-byte size classes.
	minHeap := int64(0)
	if gogc > 0 {
		minHeap = 4 << 20 * gogc / 100
	}
	if on("jdk.GCHeapConfiguration") {
		write("jdk.GCHeapConfiguration", now, long(minHeap), long(limit), long(0), jfr.BoolValue(false), jfr.RefValue(nil, 0), long(8),
			jfr.IntValue(jfr.KindByte, int64(unsafe.Sizeof(uintptr(0))*8)))
	}
	sf.physicalMemory(now, on, write)
}

// end writes the facts of a chunk's end, at ticks.
func (sf *sysFacts) end(ticks int64, on factsOn, write factWriter) {
	now := long(ticks)
	sf.physicalMemory(now, on, write)
	// While the type is off nothing is read: the first rate after it is
	// turned on again averages over the time since the last read.
	if on("jdk.ThreadContextSwitchRate") {
		if n, ok := contextSwitches(); ok && sf.switchesRead {
			at := time.Now()
			if secs := at.Sub(sf.switchesAt).Seconds(); secs > 0 && n >= sf.switches {
				write("jdk.ThreadContextSwitchRate", now, jfr.FloatValue(jfr.KindFloat, float64(n-sf.switches)/secs))
			}
			sf.switches, sf.switchesAt = n, at
		}
	}
	if on("jdk.SystemProcess") {
		eachProcess(func(pid, cmdline string) { write("jdk.SystemProcess", now, str(pid), str(cmdline)) })
	}
}

func (sf *sysFacts) physicalMemory(now jfr.Value, on factsOn, write factWriter) {
	if !on("jdk.PhysicalMemory") {
		return
	}
	if total, used, ok := physicalMemory(); ok {
		write("jdk.PhysicalMemory", now, long(int64(total)), long(int64(used)))
	}
}

// flags renders the runtime's settings as jdk.JVMInformation's jvmFlags:
// the values in effect (debug.SetGCPercent and SetMemoryLimit included),
// and GODEBUG as the environment gave it.
func (sf *sysFacts) flags(gogc, limit int64, procs int) string {
	g := "off"
	if gogc >= 0 {
		g = strconv.FormatInt(gogc, 10)
	}
	return fmt.Sprintf("GOGC=%s GOMEMLIMIT=%d GOMAXPROCS=%d GODEBUG=%s", g, limit, procs, os.Getenv("GODEBUG"))
}

// goSettings returns GOGC (negative when off), GOMEMLIMIT and GOMAXPROCS
// as the runtime applies them.
func goSettings() (gogc, limit int64, procs int) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	gogc, limit = 100, math.MaxInt64
	if s[0].Value.Kind() == metrics.KindUint64 {
		gogc = int64(s[0].Value.Uint64())
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		limit = int64(min(s[1].Value.Uint64(), math.MaxInt64))
	}
	return gogc, limit, runtime.GOMAXPROCS(0)
}
