package gobin

import (
	"debug/dwarf"
	"fmt"
	"sort"
	"strings"
)

// goidOffsets is offsetof(runtime.g, goid) on amd64 by Go release, for
// executables without DWARF. Each value was read from the DWARF of a binary
// built by that release (TestGoidOffsetTable checks the ones it can build).
var goidOffsets = map[string]uint64{
	"go1.21": 152,
	"go1.22": 152,
	"go1.23": 160,
	"go1.24": 160,
	"go1.25": 152,
	"go1.26": 152,
}

// GStackHiOffset is offsetof(runtime.g, stack.hi): stack is g's first
// field in every release.
const GStackHiOffset = 8

// GoidOffset returns offsetof(runtime.g, goid): from DWARF when present,
// else from a table keyed by the Go release in the build info.
func (b *Binary) GoidOffset() (uint64, error) {
	if b.dwarf != nil {
		if off, ok := b.dwarfGoidOffset(); ok {
			return off, nil
		}
	}
	release := b.GoVersion
	if i := strings.IndexAny(release, ". "); i >= 0 {
		if j := strings.IndexAny(release[i+1:], ". -"); j >= 0 {
			release = release[:i+1+j]
		}
	}
	if off, ok := goidOffsets[release]; ok {
		return off, nil
	}
	return 0, fmt.Errorf("no DWARF and Go version %q is not in the goid offset table (go1.21 to go1.26)", b.GoVersion)
}

func (b *Binary) dwarfGoidOffset() (uint64, bool) {
	r := b.dwarf.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			return 0, false
		}
		if e.Tag == dwarf.TagStructType && e.Val(dwarf.AttrName) == "runtime.g" {
			for {
				m, err := r.Next()
				if err != nil || m == nil || m.Tag == 0 {
					return 0, false
				}
				if m.Tag == dwarf.TagMember && m.Val(dwarf.AttrName) == "goid" {
					off, ok := m.Val(dwarf.AttrDataMemberLoc).(int64)
					return uint64(off), ok
				}
			}
		}
		if e.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
		}
	}
}

// Param is a parameter or a result of a function, from DWARF.
type Param struct {
	Name   string
	Type   dwarf.Type
	Result bool
}

// Params returns fn's parameters then results in declaration order, or
// false when the executable has no DWARF for it.
func (b *Binary) Params(fn *Func) ([]Param, bool) {
	if b.dwarf == nil {
		return nil, false
	}
	r := b.dwarf.Reader()
	e, err := r.SeekPC(fn.Entry)
	if err != nil || e == nil {
		return nil, false
	}
	// SeekPC lands on the compile unit; walk its children to the subprogram.
	for {
		e, err = r.Next()
		if err != nil || e == nil || e.Tag == 0 {
			return nil, false
		}
		if e.Tag != dwarf.TagSubprogram {
			if e.Children {
				r.SkipChildren()
			}
			continue
		}
		low, _ := e.Val(dwarf.AttrLowpc).(uint64)
		if low != fn.Entry {
			if e.Children {
				r.SkipChildren()
			}
			continue
		}
		break
	}
	var ps []Param
	for e.Children {
		c, err := r.Next()
		if err != nil || c == nil || c.Tag == 0 {
			break
		}
		if c.Tag == dwarf.TagFormalParameter {
			p := Param{}
			p.Name, _ = c.Val(dwarf.AttrName).(string)
			p.Result, _ = c.Val(dwarf.AttrVarParam).(bool)
			if off, ok := c.Val(dwarf.AttrType).(dwarf.Offset); ok {
				if t, err := b.dwarf.Type(off); err == nil {
					p.Type = t
				}
			}
			ps = append(ps, p)
		}
		if c.Children {
			r.SkipChildren()
		}
	}
	return ps, true
}

// InlinedInto returns the functions that name was inlined into, for a
// function that has no code of its own; nil when DWARF does not know name
// as an inlined function.
func (b *Binary) InlinedInto(name string) []string {
	if b.dwarf == nil {
		return nil
	}
	r := b.dwarf.Reader()
	var abstract []dwarf.Offset
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == dwarf.TagSubprogram && e.Val(dwarf.AttrName) == name {
			if _, inline := e.Val(dwarf.AttrInline).(int64); inline {
				abstract = append(abstract, e.Offset)
			}
		}
	}
	if len(abstract) == 0 {
		return nil
	}
	into := map[string]bool{}
	r = b.dwarf.Reader()
	var outer string
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		switch e.Tag {
		case dwarf.TagSubprogram:
			outer, _ = e.Val(dwarf.AttrName).(string)
		case dwarf.TagInlinedSubroutine:
			origin, _ := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
			for _, a := range abstract {
				if origin == a && outer != "" {
					into[outer] = true
				}
			}
		}
	}
	names := make([]string, 0, len(into))
	for n := range into {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
