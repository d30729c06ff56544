package recorder

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestMachineFacts checks the facts read from /proc and /sys against the
// files, read here on their own: the kernel release, the processor count,
// total memory, a context-switch rate, and this process among the
// processes with its command line; and that jfr summary counts the
// events our reader reads.
func TestMachineFacts(t *testing.T) {
	facts, path := recordFactsFile(t)
	for _, name := range factTypeNames {
		if len(facts[name]) == 0 {
			t.Errorf("no %s", name)
		}
	}
	if jfrBin, err := exec.LookPath("jfr"); err == nil {
		out, err := exec.Command(jfrBin, "summary", path).CombinedOutput()
		if err != nil {
			t.Fatalf("jfr summary: %v\n%s", err, out)
		}
		counts := map[string]string{}
		for line := range strings.Lines(string(out)) {
			if f := strings.Fields(line); len(f) == 3 {
				counts[f[0]] = f[1]
			}
		}
		for _, name := range factTypeNames {
			if counts[name] != strconv.Itoa(len(facts[name])) {
				t.Errorf("jfr summary counts %s %q, our reader %d", name, counts[name], len(facts[name]))
			}
		}
	}
	release, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		t.Fatal(err)
	}
	if osi := facts["jdk.OSInformation"]; len(osi) != 1 || !strings.Contains(osi[0]["osVersion"].(string), strings.TrimSpace(string(release))) {
		t.Errorf("jdk.OSInformation %v, want the kernel release %s", osi, release)
	}
	cpuinfo, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Fatal(err)
	}
	processors := int64(strings.Count(string(cpuinfo), "\nprocessor") + strings.Count(string(cpuinfo[:min(len(cpuinfo), 9)]), "processor"))
	if ci := facts["jdk.CPUInformation"]; len(ci) != 1 || ci[0]["hwThreads"] != processors ||
		ci[0]["cores"].(int64) < 1 || ci[0]["cores"].(int64) > processors || ci[0]["sockets"].(int64) < 1 || ci[0]["cpu"] == "" {
		t.Errorf("jdk.CPUInformation %v, want %d hardware threads", ci, processors)
	}
	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for line := range strings.Lines(string(meminfo)) {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			total = kb * 1024
		}
	}
	for _, m := range facts["jdk.PhysicalMemory"] {
		if m["totalSize"] != total || m["usedSize"].(int64) <= 0 || m["usedSize"].(int64) > total {
			t.Errorf("jdk.PhysicalMemory %v, want totalSize %d and a used size below it", m, total)
		}
	}
	if len(facts["jdk.PhysicalMemory"]) != 2 {
		t.Errorf("%d jdk.PhysicalMemory, want 2: at the chunk's start and end", len(facts["jdk.PhysicalMemory"]))
	}
	if r := facts["jdk.ThreadContextSwitchRate"]; len(r) != 1 || r[0]["switchRate"].(float64) <= 0 {
		t.Errorf("jdk.ThreadContextSwitchRate %v, want one positive rate", r)
	}
	self, n := strconv.Itoa(os.Getpid()), 0
	for _, p := range facts["jdk.SystemProcess"] {
		n++
		if p["pid"] == self && p["commandLine"] != strings.Join(os.Args, " ") {
			t.Errorf("this process's command line %q, want %q", p["commandLine"], strings.Join(os.Args, " "))
		}
		if p["pid"] == self {
			self = ""
		}
	}
	if self != "" || n < 2 {
		t.Errorf("%d processes, this one (%d) among them: %v", n, os.Getpid(), self == "")
	}
}
