package recorder

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The facts of the machine, read from /proc, /sys and /etc/os-release.

var osFactTypeNames = []string{"jdk.OSInformation", "jdk.CPUInformation", "jdk.PhysicalMemory", "jdk.ThreadContextSwitchRate", "jdk.SystemProcess"}

// osVersion returns the distribution's name (os-release's PRETTY_NAME)
// and uname, as HotSpot's jdk.OSInformation has them.
func osVersion() string {
	var b strings.Builder
	if data, err := os.ReadFile("/etc/os-release"); err == nil {
		for line := range strings.Lines(string(data)) {
			if strings.HasPrefix(line, "PRETTY_NAME=") {
				b.WriteString(strings.TrimSpace(line) + "\n")
			}
		}
	}
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		fmt.Fprintf(&b, "uname: %s %s %s %s\n", utsString(u.Sysname[:]), utsString(u.Release[:]), utsString(u.Version[:]), utsString(u.Machine[:]))
	}
	return b.String()
}

func utsString[T int8 | uint8](cs []T) string {
	b := make([]byte, 0, len(cs))
	for _, c := range cs {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// readCPUInfo counts sockets, cores and hardware threads from the CPU
// topology in /sys (the same on every architecture), and names the CPU
// from /proc/cpuinfo's first processor.
func readCPUInfo() (cpuInfo, bool) {
	var ci cpuInfo
	dirs, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/topology")
	sockets, cores := map[string]bool{}, map[string]bool{}
	for _, d := range dirs {
		pkg, err1 := os.ReadFile(d + "/physical_package_id")
		core, err2 := os.ReadFile(d + "/core_id")
		if err1 != nil || err2 != nil {
			continue
		}
		p, c := strings.TrimSpace(string(pkg)), strings.TrimSpace(string(core))
		sockets[p] = true
		cores[p+"/"+c] = true
		ci.threads++
	}
	ci.sockets, ci.cores = len(sockets), len(cores)
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil && ci.threads == 0 {
		return ci, false
	}
	fields := map[string]string{}
	processors := 0
	for line := range strings.Lines(string(data)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k == "processor" {
			processors++
		}
		if _, seen := fields[k]; !seen && processors <= 1 {
			fields[k] = v
		}
	}
	if ci.threads == 0 {
		// No topology in /sys: one socket, a core per processor.
		ci.threads, ci.cores, ci.sockets = processors, processors, min(processors, 1)
	}
	ci.cpu = fields["model name"]
	if ci.cpu == "" {
		ci.cpu = fields["Model"] // arm64 boards name it so, if at all
	}
	if ci.cpu == "" {
		ci.cpu = strings.TrimSpace(utsMachine())
	}
	var desc strings.Builder
	for _, k := range cpuDescriptionKeys {
		if v := fields[k]; v != "" {
			fmt.Fprintf(&desc, "%s: %s\n", k, v)
		}
	}
	ci.description = desc.String()
	return ci, true
}

// cpuDescriptionKeys are the /proc/cpuinfo fields of
// jdk.CPUInformation's description, which name the CPU and its features
// (x86's and arm64's names): not those that change, as its clock.
var cpuDescriptionKeys = []string{"model name", "vendor_id", "cpu family", "model", "stepping", "Hardware",
	"CPU implementer", "CPU architecture", "CPU variant", "CPU part", "CPU revision", "flags", "Features"}

func utsMachine() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return ""
	}
	return utsString(u.Machine[:])
}

// physicalMemory returns /proc/meminfo's MemTotal and MemTotal less
// MemAvailable (what HotSpot reports as used), in bytes.
func physicalMemory() (total, used uint64, ok bool) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, 0, false
	}
	var avail uint64
	var haveTotal, haveAvail bool
	for line := range strings.Lines(string(data)) {
		k, v, _ := strings.Cut(line, ":")
		n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "MemTotal":
			total, haveTotal = n*1024, true
		case "MemAvailable":
			avail, haveAvail = n*1024, true
		}
	}
	if !haveTotal || !haveAvail || avail > total {
		return 0, 0, false
	}
	return total, total - avail, true
}

// contextSwitches returns the machine's context switches since boot
// (/proc/stat's ctxt): jdk.ThreadContextSwitchRate is system-wide, as
// HotSpot's.
func contextSwitches() (uint64, bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "ctxt "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// maxCommandLine bounds a jdk.SystemProcess's command line: an event is
// at most 128 KiB, and a process's arguments may be larger.
const maxCommandLine = 4096

// eachProcess calls f with the pid and command line of every process in
// /proc, in pid order; kernel threads, which have no command line, are
// named as ps names them, [comm].
func eachProcess(f func(pid, cmdline string)) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	var pids []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
			pids = append(pids, n)
		}
	}
	slices.Sort(pids)
	buf := make([]byte, maxCommandLine)
	for _, pid := range pids {
		dir := "/proc/" + strconv.Itoa(pid)
		cmd, ok := readSmall(dir+"/cmdline", buf)
		if !ok {
			continue // gone since
		}
		cmd = bytes.TrimRight(cmd, "\x00")
		line := string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))
		if line == "" {
			comm, ok := readSmall(dir+"/comm", buf)
			if !ok {
				continue
			}
			line = "[" + strings.TrimSpace(string(comm)) + "]"
		}
		f(strconv.Itoa(pid), line)
	}
}

// readSmall reads up to len(buf) bytes of a /proc file into buf: open,
// read, close, without os.ReadFile's stat and growing buffer, since
// eachProcess reads a file of every process.
func readSmall(path string, buf []byte) ([]byte, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer syscall.Close(fd)
	n := 0
	for n < len(buf) {
		k, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, false
		}
		if k == 0 {
			break
		}
		n += k
	}
	return buf[:n], true
}

// processStart returns when the process started: /proc/self/stat's
// starttime (clock ticks after boot, at the USER_HZ of 100 /proc always
// uses) after /proc/stat's btime.
func processStart() time.Time {
	stat, err1 := os.ReadFile("/proc/self/stat")
	sys, err2 := os.ReadFile("/proc/stat")
	if err1 != nil || err2 != nil {
		return startedAt
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing parenthesis (state is field 3, starttime 22).
	i := bytes.LastIndexByte(stat, ')')
	fs := strings.Fields(string(stat[i+1:]))
	if i < 0 || len(fs) < 20 {
		return startedAt
	}
	ticks, err := strconv.ParseInt(fs[19], 10, 64)
	if err != nil {
		return startedAt
	}
	sc := bufio.NewScanner(bytes.NewReader(sys))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			boot, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				break
			}
			t := time.Unix(boot, 0).Add(time.Duration(ticks) * 10 * time.Millisecond)
			if t.After(startedAt) {
				// Not from this kernel's clock (qemu-user emulates
				// /proc/self/stat; btime moves with clock steps): the
				// process cannot have started after its packages.
				return startedAt
			}
			return t
		}
	}
	return startedAt
}
