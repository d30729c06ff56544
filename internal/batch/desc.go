package batch

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/internal/spec"
)

// Kind is how a field's Go value is encoded.
type Kind uint8

// Field kinds.
const (
	Bool Kind = iota + 1
	Int8
	Int16
	Int32
	Int64
	Uint8
	Uint16
	Uint32
	Uint64
	Float32
	Float64
	String
	Thread // a goroutine id, written as a java.lang.Thread reference
	Time   // a time.Time, written as ticks
	Func   // a function's id (FuncID), written as a jdk.types.Method reference
)

// Field describes one user field of an event type.
type Field struct {
	Name        string
	Label       string
	Description string
	Content     string // content type: "bytes", "ns", "epochms", ... ("" for none)
	Kind        Kind
	Offset      uintptr // in the event struct
}

// Op is how to encode one field: its encoding and offset in the event
// struct.
type Op struct {
	Enc    Enc
	Offset uint32
}

// Enc is how a field's value is written. The common ones come first and
// are fewer than eight, so the encoder's switch compiles to
// compare-and-branch, which predicts well, rather than a jump table, whose
// indirect jump mispredicts in VMs that restrict indirect-branch
// prediction; the rest go through one out-of-line function.
type Enc uint8

// Encodings.
const (
	EncVarint64 Enc = iota + 1 // long, unsigned long, Thread reference
	EncVarint32
	EncVarint16
	EncByte // boolean, byte
	EncString
	// The rare ones.
	EncFloat32
	EncFloat64
	EncTime      // a time.Time, as ticks
	EncUnixNanos // an int64 of ns since the Unix epoch, as ticks
	EncFunc      // a Func: its PC as the key of a jdk.types.Method
)

// EncOf returns the encoding of a field of kind k and content type c.
func EncOf(k Kind, c string) Enc {
	switch k {
	case Int64, Uint64, Thread:
		if c == "timestamp" {
			return EncUnixNanos
		}
		return EncVarint64
	case Int32, Uint32:
		return EncVarint32
	case Int16, Uint16:
		return EncVarint16
	case Bool, Int8, Uint8:
		return EncByte
	case String:
		return EncString
	case Float32:
		return EncFloat32
	case Float64:
		return EncFloat64
	case Time:
		return EncTime
	case Func:
		return EncFunc
	}
	return 0
}

// Desc is an event type: its definition and its live settings, which the
// recorder changes while events are emitted.
type Desc struct {
	ID int64
	// IDVarint is ID's varint as a little-endian word, IDLen its length:
	// the emit path stores the word whole (Slack). Ids are far below 2^56,
	// whose varint would not fit a word.
	IDVarint    uint64
	IDLen       int
	Name        string
	Label       string
	Description string
	Category    []string
	Timed       bool
	Fields      []Field
	// FixedMax bounds the encoded size of an event without its strings'
	// bytes.
	FixedMax int
	// Ops lists the fields' kinds and offsets in order, compactly, for the
	// encoder's loop. Strings holds the offsets of the string fields, whose
	// lengths add to FixedMax; Refs tells whether a field refers to a
	// goroutine or a function (constants the buffer must note).
	Ops     []Op
	Strings []uintptr
	Refs    bool
	// DefaultOff and DefaultStack are the definition's defaults.
	DefaultOff, DefaultStack bool

	On        atomic.Bool  // emit at all
	stack     atomic.Bool  // record the stack trace (SetStack, StackOn)
	noting    atomic.Bool  // Refs || stack, the emit path's one test (Noting)
	Threshold atomic.Int64 // ticks; shorter timed events are dropped
	Period    atomic.Int64 // ns, for periodic events; 0 for none
}

var (
	regMu   sync.Mutex
	reg     []*Desc
	version atomic.Uint64
)

// Register adds d to the registry and assigns its id, or returns an error
// if a type of its name is registered already.
func Register(d *Desc) error {
	regMu.Lock()
	for _, o := range reg {
		if o.Name == d.Name {
			regMu.Unlock()
			return fmt.Errorf("%s defined twice", d.Name)
		}
	}
	// The recorder's metadata builder assigns the same ids: it adds the
	// types in this order first.
	d.ID = spec.UserID(len(reg))
	d.IDVarint, d.IDLen = leb128.Word(uint64(d.ID))
	d.noting.Store(d.Refs || d.stack.Load())
	reg = append(reg, d)
	version.Add(1)
	h := onRegister.Load()
	regMu.Unlock()
	// Outside the lock: the hook reads the registry.
	if h != nil {
		(*h)(d)
	}
	return nil
}

// TypesVersion returns the registry's version without its lock, for
// callers that may not block.
func TypesVersion() uint64 { return version.Load() }

// Types returns the registered types in id order, and the registry's
// version, which changes whenever a type is added.
func Types() ([]*Desc, uint64) {
	regMu.Lock()
	defer regMu.Unlock()
	return reg[:len(reg):len(reg)], version.Load()
}

var onRegister atomic.Pointer[func(*Desc)]

// OnRegister sets a function called for every type registered later (not
// under the registry's lock: it may call Types); the recorder applies its
// settings with it.
func OnRegister(f func(*Desc)) {
	if f == nil {
		onRegister.Store(nil)
		return
	}
	onRegister.Store(&f)
}

// Noting tells whether an event of this type has something to note in
// its buffer besides its goroutine: a stack trace, or references (Refs).
// One flag that SetStack and Register keep, so the emit path makes one
// test where Refs || StackOn took seven instructions.
func (d *Desc) Noting() bool { return d.noting.Load() }

// SetStack sets whether events of this type record their stack trace.
func (d *Desc) SetStack(on bool) {
	d.stack.Store(on)
	d.noting.Store(on || d.Refs)
}

// StackOn tells whether events of this type record their stack trace.
func (d *Desc) StackOn() bool { return d.stack.Load() }

// Short tells whether a timed event lasting dur ticks is below the type's
// threshold, and so not recorded.
func (d *Desc) Short(dur int64) bool { return dur < d.Threshold.Load() }

// CheckName returns an error unless name is a dotted Java identifier
// (app.HTTPRequest), as the class name of an event type must be for JFR
// readers to accept the file.
func CheckName(name string) error {
	for _, part := range strings.Split(name, ".") {
		if !JavaIdentifier(part) {
			return fmt.Errorf("name %q is not a dotted Java identifier (such as app.HTTPRequest)", name)
		}
	}
	return nil
}

// JavaIdentifier tells whether s is a Java identifier (without checking
// for keywords, which JFR readers accept): a letter, _ or $, then letters,
// digits, _ or $.
func JavaIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !unicode.IsLetter(r) && r != '_' && r != '$' && (i == 0 || !unicode.IsDigit(r)) {
			return false
		}
	}
	return true
}
