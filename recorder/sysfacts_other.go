//go:build !linux

package recorder

import "time"

// Without /proc the machine's facts are left out: their types are not
// declared.
var osFactTypeNames []string

func osVersion() string { return "" }

func readCPUInfo() (cpuInfo, bool) { return cpuInfo{}, false }

func physicalMemory() (total, used uint64, ok bool) { return 0, 0, false }

func contextSwitches() (uint64, bool) { return 0, false }

func eachProcess(func(pid, cmdline string)) {}

// processStart returns when package recorder was initialised: the
// process's start is not read on this platform.
func processStart() time.Time { return startedAt }
