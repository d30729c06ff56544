//go:build !unix && !windows

package recorder

import "time"

// processCPU returns zeros: the platform has no per-process CPU times
// (jdk.CPULoad then reports the machine's load alone, where known).
func processCPU() (user, sys time.Duration) { return 0, 0 }
