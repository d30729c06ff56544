//go:build !linux

package recorder

import (
	"errors"
	"time"
)

// cpuSampler would take CPU samples; only Linux's perf events give them
// without taking the Go runtime's CPU profiler from the program (see
// cpusampler_linux.go), so elsewhere there are none, and
// jdk.ActiveSetting says so.
type cpuSampler struct {
	lost     uint64
	readMono int64
}

func newCPUSampler(time.Duration) (*cpuSampler, error) {
	return nil, errors.New("CPU samples need Linux perf events; the Go CPU profiler is left to the program")
}

func (s *cpuSampler) read(dst []cpuSample) []cpuSample { return dst }
func (s *cpuSampler) describe() string                 { return "" }
func (s *cpuSampler) close()                           {}
