package recorder

import (
	"syscall"
	"time"
)

// processCPU returns the user and system CPU time the process has used.
func processCPU() (user, sys time.Duration) {
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		return 0, 0
	}
	var creation, exit, kernel, usr syscall.Filetime
	if syscall.GetProcessTimes(h, &creation, &exit, &kernel, &usr) != nil {
		return 0, 0
	}
	// Filetimes count 100 ns intervals.
	ticks := func(ft syscall.Filetime) time.Duration {
		return time.Duration(int64(ft.HighDateTime)<<32|int64(ft.LowDateTime)) * 100
	}
	return ticks(usr), ticks(kernel)
}
