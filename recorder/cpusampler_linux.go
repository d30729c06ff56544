package recorder

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/flightrec/flightrec/internal/clock"
)

// cpuSampler takes CPU samples with Linux perf events: one task-clock
// counter per thread of the process, each sampling the thread's user-space
// call chain into a ring buffer of its own every period of CPU time. It
// does not touch the Go runtime's CPU profiler, which stays free for the
// program's own profiling (pprof.StartCPUProfile, net/http/pprof).
//
// Threads started later are found at the next rescan of /proc/self/task.
// The kernel walks the call chain by frame pointers, which Go keeps on
// amd64 and arm64; a leaf function without a frame hides its caller.
type cpuSampler struct {
	period   time.Duration
	threads  map[int]*perfRing
	lastScan time.Time
	lost     uint64 // samples the kernel dropped: a ring was full
	// readMono is CLOCK_MONOTONIC when the last read began: every sample
	// taken before it was read then.
	readMono int64
	// Threads the last scan could not open a counter for (out of
	// descriptors, say), and why.
	unsampled int
	lastErr   error
}

type perfRing struct {
	fd   int
	mem  []byte // the control page, then the data area
	data []byte
	gone bool // the thread exited: close after the last read
}

// perf_event_open(2) constants.
const (
	perfTypeSoftware     = 1
	perfCountSWTaskClock = 1
	perfSampleIP         = 1 << 0
	perfSampleTID        = 1 << 1
	perfSampleTime       = 1 << 2
	perfSampleCallchain  = 1 << 5
	perfFlagFDCloexec    = 1 << 3
	perfRecordLost       = 2
	perfRecordSample     = 9
	perfContextMax       = ^uint64(4095) // call-chain context markers lie above
	perfIOCEnable        = 0x2400

	attrDisabled               = 1 << 0
	attrExcludeKernel          = 1 << 5
	attrExcludeHV              = 1 << 6
	attrExcludeCallchainKernel = 1 << 21
	attrUseClockID             = 1 << 25

	// The ring of each thread: 2^n data pages. At 100 samples/s of up to
	// 64 frames (about 560 bytes each), 8 pages hold a few seconds.
	ringPages = 8
	scanEvery = 100 * time.Millisecond
	maxFrames = 64
)

// perfEventAttr is struct perf_event_attr up to PERF_ATTR_SIZE_VER5.
type perfEventAttr struct {
	typ          uint32
	size         uint32
	config       uint64
	samplePeriod uint64
	sampleType   uint64
	readFormat   uint64
	flags        uint64
	wakeupEvents uint32
	bpType       uint32
	config1      uint64
	config2      uint64
	branchSample uint64
	regsUser     uint64
	stackUser    uint32
	clockID      int32
	regsIntr     uint64
	auxWatermark uint32
	maxStack     uint16
	_            uint16
}

// newCPUSampler starts sampling every thread of the process each period
// of its CPU time. It fails when the kernel refuses perf events (a
// seccomp filter, kernel.perf_event_paranoid above 2).
func newCPUSampler(period time.Duration) (*cpuSampler, error) {
	s := &cpuSampler{period: period, threads: map[int]*perfRing{}}
	if err := s.scan(); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *cpuSampler) describe() string {
	d := fmt.Sprintf("perf events (task clock, every %v of CPU time per thread), %d threads, %d samples lost", s.period, len(s.threads), s.lost)
	if s.unsampled > 0 {
		d += fmt.Sprintf(", %d threads not sampled (%v)", s.unsampled, s.lastErr)
	}
	return d
}

// scan opens a counter for each thread not yet sampled, and marks those
// that exited as gone. Only a failure on the first thread is an error: a
// thread may exit while being opened.
func (s *cpuSampler) scan() error {
	s.lastScan = time.Now()
	d, err := os.Open("/proc/self/task")
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	live := make(map[int]bool, len(names))
	s.unsampled = 0
	for _, n := range names {
		tid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		live[tid] = true
		if s.threads[tid] != nil {
			continue
		}
		r, err := openRing(tid, s.period)
		if err != nil {
			if len(s.threads) == 0 {
				return err
			}
			if !errors.Is(err, syscall.ESRCH) { // not a thread that just exited
				s.unsampled++
				s.lastErr = err
			}
			continue
		}
		s.threads[tid] = r
	}
	for tid, r := range s.threads {
		r.gone = !live[tid]
	}
	return nil
}

func openRing(tid int, period time.Duration) (*perfRing, error) {
	attr := perfEventAttr{
		typ: perfTypeSoftware, config: perfCountSWTaskClock, samplePeriod: uint64(period.Nanoseconds()),
		sampleType: perfSampleIP | perfSampleTID | perfSampleTime | perfSampleCallchain,
		flags:      attrDisabled | attrExcludeKernel | attrExcludeHV | attrExcludeCallchainKernel | attrUseClockID,
		clockID:    1, // CLOCK_MONOTONIC
		maxStack:   maxFrames,
	}
	attr.size = uint32(unsafe.Sizeof(attr))
	fd, _, errno := syscall.Syscall6(syscall.SYS_PERF_EVENT_OPEN, uintptr(unsafe.Pointer(&attr)), uintptr(tid),
		^uintptr(0), ^uintptr(0), perfFlagFDCloexec, 0)
	if errno != 0 {
		return nil, fmt.Errorf("perf_event_open: %w", errno)
	}
	page := os.Getpagesize()
	mem, err := syscall.Mmap(int(fd), 0, (1+ringPages)*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		syscall.Close(int(fd))
		return nil, fmt.Errorf("perf ring mmap: %w", err)
	}
	r := &perfRing{fd: int(fd), mem: mem, data: mem[page:]}
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, perfIOCEnable, 0); errno != 0 {
		r.close()
		return nil, fmt.Errorf("perf enable: %w", errno)
	}
	return r, nil
}

func (r *perfRing) close() {
	syscall.Munmap(r.mem)
	syscall.Close(r.fd)
}

// The control page's data_head and data_tail (struct perf_event_mmap_page).
func (r *perfRing) head() *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[1024])) }
func (r *perfRing) tail() *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[1032])) }

// read appends the samples taken since the last read, dated in ticks.
func (s *cpuSampler) read(dst []cpuSample) []cpuSample {
	if time.Since(s.lastScan) >= scanEvery {
		s.scan()
	}
	// Samples carry CLOCK_MONOTONIC times: date them from now.
	var ts syscall.Timespec
	nowTicks := clock.Now()
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return dst
	}
	d := dating{nowTicks: nowTicks, nowMono: ts.Nano(), tps: clock.TicksPerSecond()}
	s.readMono = d.nowMono
	for tid, r := range s.threads {
		dst = s.drain(r, dst, d)
		if r.gone {
			r.close()
			delete(s.threads, tid)
		}
	}
	return dst
}

func (s *cpuSampler) close() {
	for tid, r := range s.threads {
		r.close()
		delete(s.threads, tid)
	}
}

// dating converts CLOCK_MONOTONIC nanoseconds to ticks.
type dating struct{ nowTicks, nowMono, tps int64 }

func (d dating) ticks(mono int64) int64 {
	ago := d.nowMono - mono
	return d.nowTicks - (ago/1e9*d.tps + ago%1e9*d.tps/1e9)
}

// drain reads the records of one thread's ring.
func (s *cpuSampler) drain(r *perfRing, dst []cpuSample, d dating) []cpuSample {
	head := atomic.LoadUint64(r.head()) // the kernel's writes before it are visible
	tail := *r.tail()
	var scratch []byte
	for head-tail >= 8 {
		hdr := r.at(tail, 8, &scratch)
		typ, n := binary.NativeEndian.Uint32(hdr), uint64(binary.NativeEndian.Uint16(hdr[6:]))
		if n < 8 || head-tail < n {
			break
		}
		body := r.at(tail+8, int(n-8), &scratch)
		tail += n
		switch typ {
		case perfRecordLost:
			if len(body) >= 16 {
				s.lost += binary.NativeEndian.Uint64(body[8:])
			}
		case perfRecordSample:
			if sm, ok := parseSample(body, d); ok {
				dst = append(dst, sm)
			}
		}
	}
	atomic.StoreUint64(r.tail(), tail) // the kernel may reuse the space
	return dst
}

// at returns n bytes of the ring from offset off, copied into scratch
// where they wrap around its end.
func (r *perfRing) at(off uint64, n int, scratch *[]byte) []byte {
	size := uint64(len(r.data))
	i := off % size
	if i+uint64(n) <= size {
		return r.data[i : i+uint64(n)]
	}
	*scratch = append(append((*scratch)[:0], r.data[i:]...), r.data[:uint64(n)-(size-i)]...)
	return *scratch
}

// parseSample reads a PERF_RECORD_SAMPLE of our sample type: ip, pid and
// tid (the thread's, as gettid gives it), time, then the call chain (its context markers skipped). The chain
// starts at the sampled instruction, then return addresses; the first is
// made a return address too (+1), as the symboliser expects.
func parseSample(b []byte, d dating) (cpuSample, bool) {
	if len(b) < 32 {
		return cpuSample{}, false
	}
	tid := int32(binary.NativeEndian.Uint32(b[12:]))
	t := int64(binary.NativeEndian.Uint64(b[16:]))
	nr := binary.NativeEndian.Uint64(b[24:])
	b = b[32:]
	if nr > uint64(len(b)/8) {
		return cpuSample{}, false
	}
	pcs := make([]uintptr, 0, min(nr, maxFrames))
	for i := uint64(0); i < nr && len(pcs) < maxFrames; i++ {
		pc := binary.NativeEndian.Uint64(b[8*i:])
		if pc >= perfContextMax || pc == 0 {
			continue
		}
		if len(pcs) == 0 {
			pc++
		}
		pcs = append(pcs, uintptr(pc))
	}
	if len(pcs) == 0 {
		return cpuSample{}, false
	}
	return cpuSample{ticks: d.ticks(t), mono: t, tid: tid, pcs: pcs}, true
}
