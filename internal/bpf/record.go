package bpf

// Offsets in a record (little-endian), shared by the programs and Decode.
const (
	offProbe    = 0  // u32 probe id
	offKind     = 4  // u32: 0 entry hit, 1 completed call
	offGoid     = 8  // u64
	offStart    = 16 // u64 ktime ns at entry
	offEnd      = 24 // u64 ktime ns at return (0 for an entry hit)
	offCaller   = 32 // u64 return address (*SP) at the probe
	offStackLen = 40 // u64 bytes of stack that follow the strings
	offArgs     = 48 // NumIntRegs u64: integer argument registers at entry
	offResults  = offArgs + 8*NumIntRegs
	offStrings  = offResults + 8*NumIntRegs
)

// NumIntRegs is the number of integer registers of Go's amd64 register
// ABI: RAX, RBX, RCX, RDI, RSI, R8, R9, R10, R11.
const NumIntRegs = 9

// intRegOffsets are the offsets of the ABI's integer registers in the
// x86-64 struct pt_regs that a uprobe program gets.
var intRegOffsets = [NumIntRegs]int16{80, 40, 88, 112, 104, 72, 64, 56, 48}

const (
	ptRegsR14 = 8
	ptRegsSP  = 152
	ptRegsIP  = 128
)

// Layout sizes the variable part of the records of one session.
type Layout struct {
	StrLen     int // bytes kept of each captured string (a multiple of 8)
	StrSlots   int // strings captured per record
	StackDepth int // frames kept (0: no stacks)
}

// Size returns the size of a record.
func (l Layout) Size() int { return offStrings + l.StrSlots*l.StrLen + 8*l.StackDepth }

func (l Layout) stackOff() int { return offStrings + l.StrSlots*l.StrLen }

// pendingSize is the part of a record a call's entry fills and its return
// copies: everything before the results.
const pendingSize = offResults

// Record is a decoded record.
type Record struct {
	Probe   uint32
	Return  bool
	Goid    uint64
	Start   uint64 // CLOCK_MONOTONIC ns
	End     uint64
	Caller  uint64
	Args    [NumIntRegs]uint64
	Results [NumIntRegs]uint64
	Strings [][]byte // StrSlots slices into the record
	Stack   []uint64 // PCs, innermost first
}
