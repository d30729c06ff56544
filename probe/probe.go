//go:build linux

package probe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/flightrec/flightrec/internal/bpf"
	"github.com/flightrec/flightrec/internal/gobin"
)

// Options configures a probing session.
type Options struct {
	// Funcs are function names or globs, each optionally suffixed with
	// ":entry" for an entry-only probe.
	Funcs []string
	// Args captures arguments at entry and results at every return.
	Args bool
	// StrLen is how many bytes of each string argument are kept (64 when 0).
	StrLen int
	// Stack captures the goroutine's stack, StackDepth frames (32 when 0).
	Stack      bool
	StackDepth int
	// Records asks for a record of every call (trace, JFR); without it
	// entry-only probes only count.
	Records bool
	// Sample keeps the record of one call in Sample; counts stay exact.
	Sample uint32
	// RingSize is the ring buffer's size in bytes (8 MiB when 0).
	RingSize int
	// Where keeps only the calls it matches (see ParseWhere); it implies
	// Args and Records, and the summary then counts the matching records.
	Where string
}

// singleUprobes makes sessions place perf-event uprobes even where the
// kernel has uprobe_multi links, so tests cover both.
var singleUprobes bool

// noopPrograms makes sessions place programs that do nothing, so the
// benchmark measures the floor under the real programs at the same sites.
var noopPrograms bool

// Errors a session may wrap.
var (
	ErrUnknownFunc = errors.New("unknown function")
	ErrInlined     = errors.New("function exists only inlined")
)

// Probe is one probed function.
type Probe struct {
	ID      uint32
	Func    string
	Call    bool // entry and returns; false: entry only
	Params  []*Param
	Entry   uint64   // address of the entry probe
	Returns []uint64 // addresses of the return probes
	// KernelWhere is the part of --where the kernel evaluates for this
	// probe ("" if none).
	KernelWhere string

	mu       sync.Mutex
	durs     Durations
	received uint64            // records that arrived
	matched  map[uint64]uint64 // per goroutine, with --where
}

// Kind returns "call" or "entry".
func (p *Probe) Kind() string {
	if p.Call {
		return "call"
	}
	return "entry"
}

// Session is a set of probes attached to one process.
type Session struct {
	PID    int
	Binary *gobin.Binary
	Probes []*Probe
	// Uprobes is the number of uprobes placed.
	Uprobes int

	opts   Options
	where  *Where
	bpf    *bpf.Session
	progs  []*ebpf.Program
	links  []link.Link
	reader *ringbuf.Reader
	clock  monoAnchor

	loadBias uint64
	symOnce  sync.Once
	sorted   []gobin.Func
}

// monoAnchor converts CLOCK_MONOTONIC (bpf_ktime_get_ns) to wall time.
type monoAnchor struct {
	mono int64
	wall time.Time
}

func newMonoAnchor() monoAnchor {
	var ts unix.Timespec
	wall := time.Now()
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return monoAnchor{mono: ts.Nano(), wall: wall}
}

// Wall converts a bpf_ktime_get_ns value to wall-clock time.
func (a monoAnchor) Wall(mono uint64) time.Time {
	return a.wall.Add(time.Duration(int64(mono) - a.mono))
}

// Resolve finds the functions of bin that opts.Funcs name and where to
// probe them, without touching any process.
func Resolve(bin *gobin.Binary, opts *Options) ([]*Probe, error) {
	var probes []*Probe
	seen := map[string]bool{}
	for _, spec := range opts.Funcs {
		pattern, call := spec, true
		if p, ok := strings.CutSuffix(spec, ":entry"); ok {
			pattern, call = p, false
		}
		fns := bin.Match(pattern)
		if len(fns) == 0 {
			return nil, unknownFunc(bin, pattern)
		}
		for _, fn := range fns {
			if seen[fn.Name] {
				continue
			}
			seen[fn.Name] = true
			sites, err := bin.Sites(fn)
			if err != nil {
				if len(fns) > 1 {
					continue // a glob skips functions that never return
				}
				return nil, err
			}
			p := &Probe{ID: uint32(len(probes)), Func: fn.Name, Call: call, Entry: sites.Entry}
			if call {
				p.Returns = sites.Returns
			}
			if ps, ok := bin.Params(fn); ok {
				p.Params = assignParams(ps)
			}
			probes = append(probes, p)
		}
	}
	return probes, nil
}

func unknownFunc(bin *gobin.Binary, name string) error {
	if into := bin.InlinedInto(name); len(into) > 0 {
		return fmt.Errorf("%w: %s is inlined into %s and has no code of its own to probe (probe those, or rebuild with -gcflags=-l)",
			ErrInlined, name, strings.Join(into, ", "))
	}
	hint := ""
	if !strings.ContainsAny(name, "*?") {
		if near := bin.Similar(name, 3); len(near) > 0 {
			hint = "; did you mean " + strings.Join(near, ", ") + "?"
		}
	}
	if hint == "" && !bin.HasDWARF() {
		hint = " (the executable has no DWARF to tell whether it was inlined)"
	}
	return fmt.Errorf("%w %s%s", ErrUnknownFunc, name, hint)
}

// Attach probes process pid with opts. Nothing is changed in the target
// when it fails.
func Attach(pid int, opts Options) (*Session, error) {
	exe, err := Executable(pid)
	if err != nil {
		return nil, err
	}
	target, _ := os.Readlink(exe)
	bin, err := gobin.Open(exe)
	if err != nil {
		return nil, fmt.Errorf("PID %d (%s): %w", pid, target, errors.Unwrap(err))
	}
	s, err := attach(pid, target, bin, opts)
	if err != nil {
		bin.Close()
		return nil, err
	}
	return s, nil
}

func attach(pid int, target string, bin *gobin.Binary, opts Options) (*Session, error) {
	if bin.Arch != "amd64" {
		// gobin finds arm64 functions and sites, but the programs read
		// amd64's pt_regs and register ABI.
		return nil, fmt.Errorf("PID %d (%s): probing %s executables is not supported (only amd64)", pid, target, bin.Arch)
	}
	probes, err := Resolve(bin, &opts)
	if err != nil {
		return nil, fmt.Errorf("PID %d (%s): %w", pid, target, err)
	}
	var where *Where
	if opts.Where != "" {
		names := map[string]bool{}
		for _, p := range probes {
			for _, prm := range p.Params {
				names[prm.Name] = true
			}
		}
		if where, err = ParseWhere(opts.Where, names); err != nil {
			return nil, err
		}
		opts.Args, opts.Records = true, true
	}
	goidOff, err := bin.GoidOffset()
	if err != nil {
		return nil, err
	}
	if err := CheckPrivileges(); err != nil {
		return nil, err
	}
	if err := CheckUprobes(); err != nil {
		return nil, err
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("raising RLIMIT_MEMLOCK: %w", err)
	}
	layout := bpf.Layout{}
	if opts.Args {
		if opts.StrLen < 0 || opts.StrLen > MaxStrLen {
			return nil, fmt.Errorf("--strlen %d: want 1 to %d", opts.StrLen, MaxStrLen)
		}
		layout.StrLen = (max(opts.StrLen, 1) + 7) &^ 7
		if opts.StrLen == 0 {
			layout.StrLen = 64
		}
		layout.StrSlots = assignStringSlots(probes)
	}
	if opts.Stack {
		layout.StackDepth = opts.StackDepth
		if layout.StackDepth <= 0 {
			layout.StackDepth = 32
		}
	}
	ring := opts.RingSize
	if ring == 0 {
		ring = 8 << 20
	}
	s := &Session{PID: pid, Binary: bin, Probes: probes, opts: opts, where: where}
	s.bpf, err = bpf.NewSession(layout, goidOff, len(probes), ring)
	if err != nil {
		return nil, err
	}
	s.bpf.Multi = !singleUprobes && features.HaveBPFLinkUprobeMulti() == nil
	if err := s.place(); err != nil {
		s.detach()
		s.bpf.Close()
		return nil, err
	}
	s.reader, err = ringbuf.NewReader(s.bpf.Events)
	if err != nil {
		s.detach()
		s.bpf.Close()
		return nil, err
	}
	s.clock = newMonoAnchor()
	s.loadBias = loadBiasOf(pid, bin)
	return s, nil
}

// MaxStrLen bounds --strlen, and maxStrSlots the strings captured per
// call (later ones print as not captured): a record stays well within
// the BPF per-CPU staging buffer.
const (
	MaxStrLen   = 1024
	maxStrSlots = 8
)

// assignStringSlots gives each string argument and result of a probe a
// record slot; slots are reused across probes, so the layout needs as
// many as the probe with the most strings.
func assignStringSlots(probes []*Probe) int {
	most := 0
	for _, p := range probes {
		n := 0
		for _, prm := range p.Params {
			if prm.isString && n < maxStrSlots {
				prm.str = n
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

func (s *Session) place() error {
	ex, err := link.OpenExecutable(s.Binary.Path)
	if err != nil {
		return fmt.Errorf("opening %s for uprobes: %w", s.Binary.Path, err)
	}
	if !noopPrograms {
		if err := s.cacheGoids(ex); err != nil {
			return err
		}
	}
	for _, p := range s.Probes {
		spec := &bpf.ProbeSpec{ID: p.ID, Call: p.Call, Emit: s.opts.Records || s.opts.Args || s.opts.Stack, Sample: s.opts.Sample}
		for _, prm := range p.Params {
			if prm.str < 0 {
				continue
			}
			c := bpf.StrCapture{PtrReg: prm.words[0].reg, LenReg: prm.strLen, Slot: prm.str}
			if prm.Result {
				spec.ResultStrings = append(spec.ResultStrings, c)
			} else {
				spec.ArgStrings = append(spec.ArgStrings, c)
			}
		}
		if s.where != nil {
			spec.Filter, p.KernelWhere = s.where.kernelPart(p)
		}
		entry, ret, err := s.programs(spec)
		if err != nil && spec.Filter != nil {
			// A kernel without signed division (before 6.6) rejects
			// the filter: leave it all to user space.
			spec.Filter, p.KernelWhere = nil, ""
			entry, ret, err = s.programs(spec)
		}
		if err != nil {
			return err
		}
		if err := s.uprobe(ex, entry, p.Entry); err != nil {
			return fmt.Errorf("%s: %w", p.Func, err)
		}
		if ret != nil {
			if err := s.uprobe(ex, ret, p.Returns...); err != nil {
				return fmt.Errorf("%s: %w", p.Func, err)
			}
		}
	}
	return nil
}

// cacheGoids turns on the programs' goroutine id cache by placing the
// program that forgets a g where the runtime frees it for reuse:
// runtime.gdestroy (Go 1.22 on: goroutine and coroutine exits) or, in a
// runtime without coroutines (Go 1.21), runtime.goexit0. It costs the
// target one uprobe hit per goroutine exit; without a place for it, each
// hit reads the id from g instead.
func (s *Session) cacheGoids(ex *link.Executable) error {
	fn, ok := s.Binary.Func("runtime.gdestroy")
	if !ok {
		if _, coro := s.Binary.Func("runtime.coroswitch_m"); coro {
			return nil // gdestroy inlined: goexit0 would miss coroutine exits
		}
		if fn, ok = s.Binary.Func("runtime.goexit0"); !ok {
			return nil
		}
	}
	sites, err := s.Binary.Sites(fn)
	if err != nil {
		return nil
	}
	prog, err := s.bpf.GoexitProgram()
	if err != nil {
		return err
	}
	s.progs = append(s.progs, prog)
	if err := s.uprobe(ex, prog, sites.Entry); err != nil {
		return fmt.Errorf("%s: %w", fn.Name, err)
	}
	s.bpf.CacheGoids = true
	return nil
}

// programs loads the entry program of spec and, for a call probe, its
// return program.
func (s *Session) programs(spec *bpf.ProbeSpec) (entry, ret *ebpf.Program, err error) {
	if noopPrograms {
		return s.noopPrograms(spec)
	}
	entry, err = s.bpf.EntryProgram(spec)
	if err != nil {
		return nil, nil, err
	}
	if spec.Call {
		ret, err = s.bpf.ReturnProgram(spec)
		if err != nil {
			entry.Close()
			return nil, nil, err
		}
		s.progs = append(s.progs, ret)
	}
	s.progs = append(s.progs, entry)
	return entry, ret, nil
}

func (s *Session) noopPrograms(spec *bpf.ProbeSpec) (entry, ret *ebpf.Program, err error) {
	if entry, err = s.bpf.NoopProgram(fmt.Sprintf("fr_noop_%d", spec.ID)); err != nil {
		return nil, nil, err
	}
	s.progs = append(s.progs, entry)
	if spec.Call {
		if ret, err = s.bpf.NoopProgram(fmt.Sprintf("fr_noopret_%d", spec.ID)); err != nil {
			return nil, nil, err
		}
		s.progs = append(s.progs, ret)
	}
	return entry, ret, nil
}

// uprobe places prog at addrs in the target: with one uprobe_multi link
// where the kernel has them (placing hundreds of single uprobes took
// seconds here), else one perf-event uprobe per address.
func (s *Session) uprobe(ex *link.Executable, prog *ebpf.Program, addrs ...uint64) error {
	offs := make([]uint64, len(addrs))
	for i, addr := range addrs {
		off, err := s.Binary.FileOffset(addr)
		if err != nil {
			return err
		}
		offs[i] = off
	}
	var links []link.Link
	if s.bpf.Multi {
		l, err := ex.UprobeMulti(nil, prog, &link.UprobeMultiOptions{Addresses: offs, PID: uint32(s.PID)})
		if err != nil {
			return s.uprobeError(err, addrs[0])
		}
		links = append(links, l)
	} else {
		for i, off := range offs {
			l, err := ex.Uprobe("", prog, &link.UprobeOptions{Address: off, PID: s.PID})
			if err != nil {
				return s.uprobeError(err, addrs[i])
			}
			links = append(links, l)
		}
	}
	s.links = append(s.links, links...)
	s.Uprobes += len(addrs)
	return nil
}

func (s *Session) uprobeError(err error, addr uint64) error {
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("PID %d: %w", s.PID, ErrNoProcess)
	}
	return fmt.Errorf("placing uprobe at %#x: %w", addr, err)
}

func (s *Session) detach() {
	for _, l := range s.links {
		l.Close()
	}
	s.links = nil
	for _, p := range s.progs {
		p.Close()
	}
	s.progs = nil
}

// Call is one probed call (or, for an entry-only probe, one entry).
type Call struct {
	Probe   *Probe
	Goid    uint64
	Start   time.Time
	End     time.Time // zero for an entry
	Args    []Value
	Results []Value
	Stack   []uint64 // PCs, innermost first; the caller's return address second
}

// Duration returns the call's duration (0 for an entry).
func (c *Call) Duration() time.Duration {
	if c.End.IsZero() {
		return 0
	}
	return c.End.Sub(c.Start)
}

// Run reads the probes' records until ctx is done or the target exits,
// then detaches and delivers the records still buffered. onCall, if not
// nil, sees every call in order of arrival. It returns nil when the target
// exited, ctx.Err() when ctx ended it.
func (s *Session) Run(ctx context.Context, onCall func(*Call)) error {
	exited := make(chan struct{})
	go watchExit(s.PID, exited)
	done := make(chan error, 1)
	stop := make(chan struct{})
	go func() { done <- s.consume(stop, onCall) }()
	var why error
	select {
	case <-ctx.Done():
		why = ctx.Err()
	case <-exited:
	}
	s.detach()
	close(stop)
	if err := <-done; err != nil {
		return err
	}
	return why
}

// pollInterval is how often the ring buffer is read: 8 MiB hold about
// 37,000 records, 10 ms of calls at 3.7 M calls/s.
const pollInterval = 10 * time.Millisecond

func (s *Session) consume(stop <-chan struct{}, onCall func(*Call)) error {
	var rec ringbuf.Record
	var r bpf.Record
	layout := s.bpf.Layout
	draining := false
	for {
		if !draining {
			select {
			case <-stop:
				draining = true
				s.reader.SetDeadline(time.Now())
			default:
				// The programs do not wake the reader (see internal/bpf):
				// it polls.
				s.reader.SetDeadline(time.Now().Add(pollInterval))
			}
		}
		err := s.reader.ReadInto(&rec)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if draining {
				return nil
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the ring buffer: %w", err)
		}
		if err := layout.Decode(rec.RawSample, &r); err != nil {
			return err
		}
		if int(r.Probe) >= len(s.Probes) {
			continue
		}
		p := s.Probes[r.Probe]
		c := s.call(p, &r)
		p.mu.Lock()
		p.received++
		p.mu.Unlock()
		if s.where != nil && !s.where.Match(c) {
			continue
		}
		p.mu.Lock()
		if r.Return {
			p.durs.Add(r.End - r.Start)
		}
		if s.where != nil {
			if p.matched == nil {
				p.matched = map[uint64]uint64{}
			}
			p.matched[r.Goid]++
		}
		p.mu.Unlock()
		if onCall != nil {
			onCall(c)
		}
	}
}

func (s *Session) call(p *Probe, r *bpf.Record) *Call {
	c := &Call{Probe: p, Goid: r.Goid, Start: s.clock.Wall(r.Start)}
	if r.Return {
		c.End = s.clock.Wall(r.End)
	}
	if s.opts.Args {
		for _, prm := range p.Params {
			if prm.Result {
				if r.Return {
					c.Results = append(c.Results, prm.decode(&r.Results, r.Strings))
				}
			} else {
				c.Args = append(c.Args, prm.decode(&r.Args, r.Strings))
			}
		}
	}
	if len(r.Stack) > 0 {
		// The kernel walks frame pointers from BP, which at the probe still
		// belongs to the caller: the caller's own PC is the return address
		// at SP, which the program saved.
		c.Stack = append(c.Stack, r.Stack[0], r.Caller)
		c.Stack = append(c.Stack, r.Stack[1:]...)
	}
	return c
}

// watchExit closes exited when process pid ends: through a pidfd, or on
// kernels without pidfd_open (before 5.3) by polling /proc.
func watchExit(pid int, exited chan<- struct{}) {
	defer close(exited)
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		for processAlive(pid) {
			time.Sleep(100 * time.Millisecond)
		}
		return
	}
	defer unix.Close(fd)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n > 0 {
			return
		}
	}
}

// processAlive tells whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// Received returns how many records of p reached user space.
func (p *Probe) Received() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.received
}

// Summary of one probe.
type Summary struct {
	Func       string
	Kind       string
	Calls      uint64
	Dropped    uint64 // records lost to a full ring buffer
	Lost       uint64 // calls not counted or not paired: a map was full
	Goroutines map[uint64]uint64
	Durations  *Durations // nil for entry probes
}

// Summaries returns the probes' totals so far.
func (s *Session) Summaries() ([]Summary, error) {
	out := make([]Summary, len(s.Probes))
	for i, p := range s.Probes {
		out[i] = Summary{Func: p.Func, Kind: p.Kind(), Goroutines: map[uint64]uint64{}}
		var st bpf.Stats
		if err := s.bpf.StatsMap.Lookup(p.ID, &st); err != nil {
			return nil, fmt.Errorf("reading probe stats: %w", err)
		}
		out[i].Dropped, out[i].Lost = st.Dropped, st.Lost
		if p.Call {
			p.mu.Lock()
			d := p.durs
			d.buckets = make(map[int]uint64, len(p.durs.buckets))
			for k, v := range p.durs.buckets {
				d.buckets[k] = v
			}
			p.mu.Unlock()
			out[i].Durations = &d
		}
	}
	var key struct {
		Probe uint32
		_     uint32
		Goid  uint64
	}
	var n uint64
	it := s.bpf.Counts.Iterate()
	for it.Next(&key, &n) {
		if int(key.Probe) < len(out) {
			out[key.Probe].Goroutines[key.Goid] = n
			out[key.Probe].Calls += n
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading call counts: %w", err)
	}
	if s.where != nil {
		// Only the matching calls count; the kernel counted them all.
		for i, p := range s.Probes {
			p.mu.Lock()
			out[i].Calls, out[i].Goroutines = 0, map[uint64]uint64{}
			for g, n := range p.matched {
				out[i].Goroutines[g] = n
				out[i].Calls += n
			}
			p.mu.Unlock()
		}
	}
	return out, nil
}

// Close detaches the probes and frees everything.
func (s *Session) Close() error {
	s.detach()
	if s.reader != nil {
		s.reader.Close()
	}
	s.bpf.Close()
	return s.Binary.Close()
}

// SortedGoroutines returns the goroutine ids of m in increasing order.
func SortedGoroutines(m map[uint64]uint64) []uint64 {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}
