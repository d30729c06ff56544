package bpf

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// StrCapture names the registers of one string (pointer, length; indexes
// into the integer registers) and the record slot its bytes go to.
type StrCapture struct {
	PtrReg, LenReg int
	Slot           int
}

// ProbeSpec describes the programs of one probed function.
type ProbeSpec struct {
	ID uint32
	// Call pairs each entry with its return and records completed calls;
	// otherwise each entry hit is counted (and recorded when Emit).
	Call bool
	// Emit sends entry hits to the ring buffer (Call always does).
	Emit bool
	// Sample keeps one record in Sample (by a random draw); counts stay
	// exact. 0 or 1 keeps every record.
	Sample uint32
	// ArgStrings are read at entry, ResultStrings at return.
	ArgStrings, ResultStrings []StrCapture
	// Filter, when set, drops in the kernel the records it rejects (the
	// calls are still counted).
	Filter *Expr
}

// Stats are per-probe counters the programs keep, indexed like probe ids.
type Stats struct {
	Dropped uint64 // records that did not fit in the ring buffer
	Lost    uint64 // calls not counted or not paired: a map was full
}

// Session holds the maps shared by all probes of one run.
type Session struct {
	Layout   Layout
	GoidOff  uint64
	Counts   *ebpf.Map // {probe u32, pad u32, goid u64} -> calls u64
	Pending  *ebpf.Map // {goid, depth, probe} -> record prefix
	Scratch  *ebpf.Map // per-CPU staging for a pending value
	StatsMap *ebpf.Map // probe -> Stats
	Events   *ebpf.Map // ring buffer
	// Goids caches each live goroutine's id by the address of its g:
	// reading the id from the target's memory (bpf_probe_read_user) was
	// most of a count probe's own cost. The cache is only correct while
	// GoexitProgram runs wherever the runtime frees a g for reuse, so
	// programs use it only once CacheGoids is set.
	Goids      *ebpf.Map // g address u64 -> goid u64
	CacheGoids bool

	labels int // makes jump labels unique
	// Multi loads the programs for uprobe_multi links (Linux 6.6+), which
	// place all of a program's uprobes in one system call.
	Multi bool
}

// Limits of the maps: bounded whatever the target does.
const (
	MaxGoroutineKeys = 1 << 16 // (probe, goroutine) pairs counted
	MaxPending       = 1 << 16 // calls in flight (LRU: stale ones evicted)
)

// NewSession creates the maps. ringSize is the ring buffer's size in bytes
// (a power of two, a multiple of the page size).
func NewSession(layout Layout, goidOff uint64, probes int, ringSize int) (*Session, error) {
	s := &Session{Layout: layout, GoidOff: goidOff}
	var err error
	mk := func(spec *ebpf.MapSpec) *ebpf.Map {
		if err != nil {
			return nil
		}
		var m *ebpf.Map
		m, err = ebpf.NewMap(spec)
		if err != nil {
			err = fmt.Errorf("creating map %s: %w", spec.Name, err)
		}
		return m
	}
	s.Counts = mk(&ebpf.MapSpec{Name: "fr_counts", Type: ebpf.Hash, KeySize: 16, ValueSize: 8, MaxEntries: MaxGoroutineKeys})
	s.Pending = mk(&ebpf.MapSpec{Name: "fr_pending", Type: ebpf.LRUHash, KeySize: 24, ValueSize: uint32(pendingSize + layout.StrSlots*layout.StrLen), MaxEntries: MaxPending})
	s.Scratch = mk(&ebpf.MapSpec{Name: "fr_scratch", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: uint32(pendingSize + layout.StrSlots*layout.StrLen), MaxEntries: 1})
	s.StatsMap = mk(&ebpf.MapSpec{Name: "fr_stats", Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: uint32(max(probes, 1))})
	s.Events = mk(&ebpf.MapSpec{Name: "fr_events", Type: ebpf.RingBuf, MaxEntries: uint32(ringSize)})
	s.Goids = mk(&ebpf.MapSpec{Name: "fr_goids", Type: ebpf.Hash, KeySize: 8, ValueSize: 8, MaxEntries: MaxGoroutineKeys})
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close releases the maps.
func (s *Session) Close() {
	for _, m := range []*ebpf.Map{s.Counts, s.Pending, s.Scratch, s.StatsMap, s.Events, s.Goids} {
		if m != nil {
			m.Close()
		}
	}
}

// Stack slots of the programs (offsets from R10).
const (
	fpGoid    = -8  // u64 goid
	fpHi      = -16 // u64 g.stack.hi
	fpCntKey  = -32 // {probe u32, pad u32, goid u64}
	fpOne     = -40 // u64 1
	fpPendKey = -64 // {goid, depth, probe u64}
	fpZero    = -68 // u32 0 (scratch key)
	fpStatIdx = -72 // u32 probe id
	fpG       = -80 // u64 g address (goid cache key)
)

// EntryProgram returns the program for p's entry probe.
func (s *Session) EntryProgram(p *ProbeSpec) (*ebpf.Program, error) {
	insns := s.prologue(p, "exit")
	insns = append(insns, s.count(p)...)
	switch {
	case p.Call:
		insns = append(insns, s.sample(p, "exit")...)
		insns = append(insns, s.pendingKey(p, "exit")...)
		insns = append(insns,
			asm.StoreImm(asm.R10, fpZero, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, s.Scratch.FD()),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, fpZero),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "exit"),
			asm.Mov.Reg(asm.R8, asm.R0),
		)
		insns = append(insns, s.fillEntry(p)...)
		insns = append(insns,
			asm.LoadMapPtr(asm.R1, s.Pending.FD()),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, fpPendKey),
			asm.Mov.Reg(asm.R3, asm.R8),
			asm.Mov.Imm(asm.R4, 0),
			asm.FnMapUpdateElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "exit"),
		)
		insns = append(insns, s.bumpStat(p, 8)...)
	case p.Emit:
		insns = append(insns, s.sample(p, "exit")...)
		insns = append(insns, s.reserve(p, "exit")...)
		insns = append(insns, s.fillEntry(p)...)
		insns = append(insns,
			asm.StoreImm(asm.R8, offKind, 0, asm.Word),
			asm.Mov.Imm(asm.R1, 0),
			asm.StoreMem(asm.R8, offEnd, asm.R1, asm.DWord),
		)
		insns = append(insns, s.stack(p)...)
		publish, err := s.publish(p, "exit")
		if err != nil {
			return nil, err
		}
		insns = append(insns, publish...)
	}
	insns = append(insns, asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"), asm.Return())
	return s.load(fmt.Sprintf("fr_entry_%d", p.ID), insns)
}

// ReturnProgram returns the program for p's RET probes (call probes only).
func (s *Session) ReturnProgram(p *ProbeSpec) (*ebpf.Program, error) {
	insns := s.prologue(p, "exit")
	insns = append(insns, s.pendingKey(p, "exit")...)
	insns = append(insns,
		asm.LoadMapPtr(asm.R1, s.Pending.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, fpPendKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "exit"),
		asm.Mov.Reg(asm.R9, asm.R0),
	)
	insns = append(insns, s.reserve(p, "delete")...)
	// Copy the entry's part of the record, word by word (cheaper than a
	// helper call), then complete it.
	for off := int16(0); off < pendingSize; off += 8 {
		insns = append(insns,
			asm.LoadMem(asm.R1, asm.R9, off, asm.DWord),
			asm.StoreMem(asm.R8, off, asm.R1, asm.DWord),
		)
	}
	// The pending value keeps the strings right after the prefix; the record
	// has the results in between.
	if n := s.Layout.StrSlots * s.Layout.StrLen; n > 0 {
		insns = append(insns,
			asm.Mov.Reg(asm.R1, asm.R8),
			asm.Add.Imm(asm.R1, offStrings),
			asm.Mov.Imm(asm.R2, int32(n)),
			asm.Mov.Reg(asm.R3, asm.R9),
			asm.Add.Imm(asm.R3, pendingSize),
			asm.FnProbeReadKernel.Call(),
		)
	}
	insns = append(insns,
		asm.StoreImm(asm.R8, offProbe, int64(p.ID), asm.Word),
		asm.StoreImm(asm.R8, offKind, 1, asm.Word),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(asm.R8, offEnd, asm.R0, asm.DWord),
	)
	for i, off := range intRegOffsets {
		insns = append(insns,
			asm.LoadMem(asm.R1, asm.R6, off, asm.DWord),
			asm.StoreMem(asm.R8, int16(offResults+8*i), asm.R1, asm.DWord),
		)
	}
	insns = append(insns, s.readStrings(p.ResultStrings, offResults)...)
	insns = append(insns, s.caller()...)
	insns = append(insns, s.stack(p)...)
	publish, err := s.publish(p, "delete")
	if err != nil {
		return nil, err
	}
	insns = append(insns, publish...)
	insns = append(insns,
		asm.LoadMapPtr(asm.R1, s.Pending.FD()).WithSymbol("delete"),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, fpPendKey),
		asm.FnMapDeleteElem.Call(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	)
	return s.load(fmt.Sprintf("fr_ret_%d", p.ID), insns)
}

// prologue keeps ctx in R6, g in R7 and puts the goroutine id at fpGoid:
// from the goid cache when it is on, else read from g.
func (s *Session) prologue(p *ProbeSpec, fail string) asm.Instructions {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R7, asm.R6, ptRegsR14, asm.DWord),
	}
	if s.CacheGoids {
		insns = append(insns,
			asm.StoreMem(asm.R10, fpG, asm.R7, asm.DWord),
			asm.LoadMapPtr(asm.R1, s.Goids.FD()),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, fpG),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "goid_read"),
			asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
			asm.StoreMem(asm.R10, fpGoid, asm.R1, asm.DWord),
			asm.Ja.Label("goid_known"),
		)
	}
	read := asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, fpGoid),
		asm.Mov.Imm(asm.R2, 8),
		asm.Mov.Reg(asm.R3, asm.R7),
		asm.Add.Imm(asm.R3, int32(s.GoidOff)),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, fail),
	}
	if s.CacheGoids {
		read[0] = read[0].WithSymbol("goid_read")
		// A full cache (64 Ki goroutines) only means reading the id again.
		read = append(read,
			asm.LoadMapPtr(asm.R1, s.Goids.FD()),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, fpG),
			asm.Mov.Reg(asm.R3, asm.R10),
			asm.Add.Imm(asm.R3, fpGoid),
			asm.Mov.Imm(asm.R4, 0),
			asm.FnMapUpdateElem.Call(),
		)
	}
	insns = append(insns, read...)
	stat := asm.StoreImm(asm.R10, fpStatIdx, int64(p.ID), asm.Word)
	if s.CacheGoids {
		stat = stat.WithSymbol("goid_known")
	}
	return append(insns, stat)
}

// GoexitProgram returns the program that keeps the goid cache right: it
// goes where the runtime frees a g (runtime.gdestroy, or goexit0 before
// Go 1.22), whose first argument (RAX) is the g, and forgets that g, so
// the goroutine that gets it next has its own id read.
func (s *Session) GoexitProgram() (*ebpf.Program, error) {
	return s.load("fr_goexit", asm.Instructions{
		asm.LoadMem(asm.R1, asm.R1, intRegOffsets[0], asm.DWord),
		asm.StoreMem(asm.R10, fpG, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, s.Goids.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, fpG),
		asm.FnMapDeleteElem.Call(),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	})
}

// count adds one to the (probe, goroutine) counter.
func (s *Session) count(p *ProbeSpec) asm.Instructions {
	insns := asm.Instructions{
		asm.StoreImm(asm.R10, fpCntKey, int64(p.ID), asm.Word),
		asm.StoreImm(asm.R10, fpCntKey+4, 0, asm.Word),
		asm.LoadMem(asm.R1, asm.R10, fpGoid, asm.DWord),
		asm.StoreMem(asm.R10, fpCntKey+8, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, s.Counts.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, fpCntKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "newgoid"),
		// A plain add: only the goroutine of the key counts into it, and
		// it runs on one thread at a time.
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Ja.Label("counted"),
		asm.Mov.Imm(asm.R1, 1).WithSymbol("newgoid"),
		asm.StoreMem(asm.R10, fpOne, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, s.Counts.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, fpCntKey),
		asm.Mov.Reg(asm.R3, asm.R10),
		asm.Add.Imm(asm.R3, fpOne),
		// BPF_NOEXIST: a goroutine runs on one CPU at a time, so no other
		// program inserts this key meanwhile; failing means the map is full.
		asm.Mov.Imm(asm.R4, 1),
		asm.FnMapUpdateElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "counted"),
	}
	insns = append(insns, s.bumpStat(p, 8)...)
	insns = append(insns, asm.Mov.Imm(asm.R0, 0).WithSymbol("counted"))
	return insns
}

// sample skips the rest of the program for all but one call in p.Sample.
func (s *Session) sample(p *ProbeSpec, skip string) asm.Instructions {
	if p.Sample <= 1 {
		return nil
	}
	return asm.Instructions{
		asm.FnGetPrandomU32.Call(),
		asm.Mod.Imm(asm.R0, int32(p.Sample)),
		asm.JNE.Imm(asm.R0, 0, skip),
	}
}

// pendingKey builds {goid, g.stack.hi - SP, probe} at fpPendKey.
func (s *Session) pendingKey(p *ProbeSpec, fail string) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R10),
		asm.Add.Imm(asm.R1, fpHi),
		asm.Mov.Imm(asm.R2, 8),
		asm.Mov.Reg(asm.R3, asm.R7),
		asm.Add.Imm(asm.R3, gStackHi),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, fail),
		asm.LoadMem(asm.R1, asm.R10, fpGoid, asm.DWord),
		asm.StoreMem(asm.R10, fpPendKey, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R10, fpHi, asm.DWord),
		asm.LoadMem(asm.R2, asm.R6, ptRegsSP, asm.DWord),
		asm.Sub.Reg(asm.R1, asm.R2),
		asm.StoreMem(asm.R10, fpPendKey+8, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R1, int32(p.ID)),
		asm.StoreMem(asm.R10, fpPendKey+16, asm.R1, asm.DWord),
	}
}

// fillEntry writes the entry's fields into the record or pending value at
// R8 (the two share the layout up to the results).
func (s *Session) fillEntry(p *ProbeSpec) asm.Instructions {
	insns := asm.Instructions{
		asm.StoreImm(asm.R8, offProbe, int64(p.ID), asm.Word),
		asm.LoadMem(asm.R1, asm.R10, fpGoid, asm.DWord),
		asm.StoreMem(asm.R8, offGoid, asm.R1, asm.DWord),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(asm.R8, offStart, asm.R0, asm.DWord),
	}
	for i, off := range intRegOffsets {
		insns = append(insns,
			asm.LoadMem(asm.R1, asm.R6, off, asm.DWord),
			asm.StoreMem(asm.R8, int16(offArgs+8*i), asm.R1, asm.DWord),
		)
	}
	strBase := offStrings
	if p.Call {
		strBase = pendingSize // in the pending value strings follow the args
	}
	insns = append(insns, s.readStringsAt(p.ArgStrings, offArgs, strBase)...)
	return append(insns, s.caller()...)
}

// caller stores *SP, the return address, at offCaller of R8. Only stacks
// use it, and reading the target's memory costs as much as the rest of a
// count probe, so without stacks it stores 0.
func (s *Session) caller() asm.Instructions {
	if s.Layout.StackDepth == 0 {
		return asm.Instructions{asm.Mov.Imm(asm.R1, 0), asm.StoreMem(asm.R8, offCaller, asm.R1, asm.DWord)}
	}
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R8),
		asm.Add.Imm(asm.R1, offCaller),
		asm.Mov.Imm(asm.R2, 8),
		asm.LoadMem(asm.R3, asm.R6, ptRegsSP, asm.DWord),
		asm.FnProbeReadUser.Call(),
	}
}

func (s *Session) readStrings(cs []StrCapture, regBase int16) asm.Instructions {
	return s.readStringsAt(cs, regBase, offStrings)
}

// readStringsAt reads each string's first StrLen bytes (fewer when the
// string is shorter) into its slot, taking pointer and length from the
// register copies at regBase in R8.
func (s *Session) readStringsAt(cs []StrCapture, regBase int16, strBase int) asm.Instructions {
	var insns asm.Instructions
	for i, c := range cs {
		skip := fmt.Sprintf("str_%d_%d_%d", regBase, strBase, i)
		insns = append(insns,
			asm.LoadMem(asm.R2, asm.R8, regBase+int16(8*c.LenReg), asm.DWord),
			asm.JEq.Imm(asm.R2, 0, skip),
			asm.JLE.Imm(asm.R2, int32(s.Layout.StrLen), skip+"_n"),
			asm.Mov.Imm(asm.R2, int32(s.Layout.StrLen)),
			asm.Mov.Reg(asm.R1, asm.R8).WithSymbol(skip+"_n"),
			asm.Add.Imm(asm.R1, int32(strBase+c.Slot*s.Layout.StrLen)),
			asm.LoadMem(asm.R3, asm.R8, regBase+int16(8*c.PtrReg), asm.DWord),
			asm.FnProbeReadUser.Call(),
			asm.Mov.Imm(asm.R0, 0).WithSymbol(skip),
		)
	}
	return insns
}

// stack stores the user stack (frame pointers) after the strings.
func (s *Session) stack(p *ProbeSpec) asm.Instructions {
	if s.Layout.StackDepth == 0 {
		return asm.Instructions{asm.Mov.Imm(asm.R1, 0), asm.StoreMem(asm.R8, offStackLen, asm.R1, asm.DWord)}
	}
	const userStack = 1 << 8 // BPF_F_USER_STACK
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Reg(asm.R2, asm.R8),
		asm.Add.Imm(asm.R2, int32(s.Layout.stackOff())),
		asm.Mov.Imm(asm.R3, int32(8*s.Layout.StackDepth)),
		asm.Mov.Imm(asm.R4, userStack),
		asm.FnGetStack.Call(),
		asm.StoreMem(asm.R8, offStackLen, asm.R0, asm.DWord),
	}
}

// reserve reserves a record in R8, counting a drop and jumping to fail
// when the ring buffer is full.
func (s *Session) reserve(p *ProbeSpec, fail string) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMapPtr(asm.R1, s.Events.FD()),
		asm.Mov.Imm(asm.R2, int32(s.Layout.Size())),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.Mov.Reg(asm.R8, asm.R0),
		asm.JNE.Imm(asm.R0, 0, "reserved"),
	}
	insns = append(insns, s.bumpStat(p, 0)...)
	return append(insns, asm.Ja.Label(fail), asm.Mov.Imm(asm.R0, 0).WithSymbol("reserved"))
}

// bumpStat adds one to the probe's Stats field at off (0 Dropped, 8 Lost).
func (s *Session) bumpStat(p *ProbeSpec, off int16) asm.Instructions {
	s.labels++
	label := fmt.Sprintf("stat_%d", s.labels)
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, s.StatsMap.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, fpStatIdx),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, label),
		asm.Mov.Imm(asm.R1, 1),
		asm.AddAtomic.Mem(asm.R0, asm.R1, asm.DWord, 0),
		asm.Mov.Imm(asm.R0, 0).WithSymbol(label),
	}
}

// publish submits the record in R8 and jumps to next. With p.Filter, a
// record the filter rejects is discarded instead (and only then is the
// discard emitted: the verifier rejects unreachable code).
func (s *Session) publish(p *ProbeSpec, next string) (asm.Instructions, error) {
	if p.Filter == nil {
		return submit(next), nil
	}
	filter, err := s.compileFilter(p.Filter, p.Call, "discard")
	if err != nil {
		return nil, err
	}
	insns := append(filter, submit(next)...)
	return append(insns, discard("discard", next)...), nil
}

// discard drops the record in R8 (labelled label) and jumps to next.
func discard(label, next string) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R8).WithSymbol(label),
		asm.Mov.Imm(asm.R2, 0),
		asm.FnRingbufDiscard.Call(),
		asm.Ja.Label(next),
	}
}

// submit publishes the record without waking the reader, which polls:
// a wake-up per record costs the probed thread an irq_work and a
// scheduler wake-up, more than the rest of the program.
func submit(next string) asm.Instructions {
	const noWakeup = 1 // BPF_RB_NO_WAKEUP
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R8),
		asm.Mov.Imm(asm.R2, noWakeup),
		asm.FnRingbufSubmit.Call(),
		asm.Ja.Label(next),
	}
}

// NoopProgram returns a program that only returns. Placed where a probe
// goes, it measures what the uprobe costs before any program work: the
// trap, the emulated or single-stepped instruction, the dispatch.
func (s *Session) NoopProgram(name string) (*ebpf.Program, error) {
	return s.load(name, asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()})
}

func (s *Session) load(name string, insns asm.Instructions) (*ebpf.Program, error) {
	spec := &ebpf.ProgramSpec{
		Name:         name,
		Type:         ebpf.Kprobe,
		Instructions: insns,
		License:      "GPL",
	}
	if s.Multi {
		spec.AttachType = ebpf.AttachTraceUprobeMulti
	}
	prog, err := ebpf.NewProgram(spec)
	if err != nil {
		return nil, fmt.Errorf("loading BPF program %s: %w", name, err)
	}
	return prog, nil
}

// Decode decodes a record of layout l.
func (l Layout) Decode(b []byte, r *Record) error {
	if len(b) < l.Size() {
		return fmt.Errorf("record of %d bytes, want %d", len(b), l.Size())
	}
	le := binary.LittleEndian
	r.Probe = le.Uint32(b[offProbe:])
	r.Return = le.Uint32(b[offKind:]) == 1
	r.Goid = le.Uint64(b[offGoid:])
	r.Start = le.Uint64(b[offStart:])
	r.End = le.Uint64(b[offEnd:])
	r.Caller = le.Uint64(b[offCaller:])
	for i := range r.Args {
		r.Args[i] = le.Uint64(b[offArgs+8*i:])
		r.Results[i] = le.Uint64(b[offResults+8*i:])
	}
	r.Strings = r.Strings[:0]
	for i := 0; i < l.StrSlots; i++ {
		o := offStrings + i*l.StrLen
		r.Strings = append(r.Strings, b[o:o+l.StrLen])
	}
	r.Stack = r.Stack[:0]
	n := int(int64(le.Uint64(b[offStackLen:])))
	if n > 8*l.StackDepth {
		n = 8 * l.StackDepth
	}
	for i := 0; i+8 <= n; i += 8 {
		r.Stack = append(r.Stack, le.Uint64(b[l.stackOff()+i:]))
	}
	return nil
}
