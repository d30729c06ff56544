package recorder

import (
	"errors"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// samplesExpected tells whether a profile recording here takes CPU samples:
// where Linux perf events open, on amd64. Under qemu-user (how CI runs the
// arm64 tests) the counters open but never sample the emulated code.
func samplesExpected(t *testing.T) bool {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Logf("CPU samples not checked on %s (emulated in CI)", runtime.GOARCH)
		return false
	}
	s, err := newCPUSampler(10 * time.Millisecond)
	if err != nil {
		t.Logf("CPU samples not checked: %v", err)
		return false
	}
	s.close()
	return true
}

// skipIfCannotExec skips a test whose child process (the test binary run
// again) cannot start: under qemu-user without binfmt_misc, as CI runs the
// arm64 tests, the kernel cannot execute the arm64 binary.
func skipIfCannotExec(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, syscall.ENOEXEC) {
		t.Skipf("cannot run the test binary as a child here: %v", err)
	}
}
