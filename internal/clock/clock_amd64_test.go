//go:build amd64 && !purego && linux

package clock

import (
	"os"
	"strings"
	"testing"
)

// TestInvariantTSCMatchesKernel compares the CPUID check with Linux's
// reading of the same bit, the nonstop_tsc flag of /proc/cpuinfo.
func TestInvariantTSCMatchesKernel(t *testing.T) {
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip(err)
	}
	kernel := false
	for _, line := range strings.Split(string(info), "\n") {
		if name, flags, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "flags" {
			kernel = strings.Contains(" "+flags+" ", " nonstop_tsc ")
			break
		}
	}
	if got := invariantTSC(); got != kernel {
		t.Fatalf("invariantTSC = %v, the kernel's nonstop_tsc flag says %v", got, kernel)
	}
}
