package gobin

import (
	"debug/buildinfo"
	"debug/dwarf"
	"debug/elf"
	"debug/gosym"
	"debug/macho"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
)

// ErrNotGo is returned for executables without a Go symbol table.
var ErrNotGo = errors.New("not a Go executable (no .gopclntab)")

// ErrNotELF is returned for files that are not ELF executables: a
// directory, an empty or text file, a recording, a Mach-O or PE executable.
var ErrNotELF = errors.New("not an ELF executable")

// Func is a function of the executable, as the pclntab lists it.
type Func struct {
	Name       string
	Entry, End uint64 // virtual addresses; End is exclusive
}

// Binary is an opened Go executable.
type Binary struct {
	Path      string
	Arch      string // GOARCH: "amd64" or "arm64"
	GoVersion string // from the build info, e.g. "go1.26.8"; "" if absent
	PIE       bool
	Funcs     []Func // sorted by name

	elf    *elf.File
	elided map[string][]*Func // by name with type arguments shown as [...]
	tab    *gosym.Table
	dwarf  *dwarf.Data // nil when stripped
	byName map[string]*Func
}

// Open reads the executable at path.
func Open(path string) (*Binary, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, openError(path, err)
	}
	b, err := load(path, f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// openError is the error of elf.Open: debug/elf says "bad magic number
// '[70 76 82 0]' in record at byte 0x0", "EOF" for a short file or "read:
// is a directory". A file that does not start as ELF files do is named
// and said not to be one, with what it is where that is known.
func openError(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return err // a *PathError, naming the file
	}
	if st, serr := os.Stat(path); serr == nil && st.IsDir() {
		return fmt.Errorf("%s: %w (a directory)", path, ErrNotELF)
	}
	var head [4]byte
	n := 0
	if f, oerr := os.Open(path); oerr == nil {
		n, _ = io.ReadFull(f, head[:])
		f.Close()
	}
	le, be := binary.LittleEndian.Uint32(head[:]), binary.BigEndian.Uint32(head[:])
	switch {
	case n == 4 && string(head[:]) == elf.ELFMAG:
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%s: truncated ELF file", path)
		}
		return fmt.Errorf("%s: damaged ELF file: %w", path, err)
	case n == 0:
		return fmt.Errorf("%s: %w (an empty file)", path, ErrNotELF)
	case n == 4 && string(head[:]) == "FLR\x00":
		return fmt.Errorf("%s: %w (a JDK Flight Recorder recording)", path, ErrNotELF)
	case n == 4 && (le == macho.Magic32 || le == macho.Magic64 || be == macho.Magic32 || be == macho.Magic64):
		return fmt.Errorf("%s: %w (a Mach-O file)", path, ErrNotELF)
	case n >= 2 && string(head[:2]) == "MZ":
		return fmt.Errorf("%s: %w (a PE/Windows file)", path, ErrNotELF)
	}
	return fmt.Errorf("%s: %w", path, ErrNotELF)
}

func load(path string, f *elf.File) (*Binary, error) {
	arch := map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
	if arch == "" {
		return nil, fmt.Errorf("unsupported architecture %v (only amd64 and arm64)", f.Machine)
	}
	b := &Binary{Path: path, Arch: arch, elf: f, PIE: f.Type == elf.ET_DYN, byName: map[string]*Func{}, elided: map[string][]*Func{}}
	if bi, err := buildinfo.ReadFile(path); err == nil {
		b.GoVersion = bi.GoVersion
	}
	sec := f.Section(".gopclntab")
	if sec == nil {
		return nil, ErrNotGo
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("reading .gopclntab: %w", err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, b.textStart(data)))
	if err != nil {
		return nil, fmt.Errorf("parsing .gopclntab: %w", err)
	}
	b.tab = tab
	for _, fn := range tab.Funcs {
		b.Funcs = append(b.Funcs, Func{Name: fn.Name, Entry: fn.Entry, End: fn.End})
	}
	if len(b.Funcs) == 0 {
		return nil, ErrNotGo
	}
	sort.Slice(b.Funcs, func(i, j int) bool { return b.Funcs[i].Name < b.Funcs[j].Name })
	for i := range b.Funcs {
		fn := &b.Funcs[i]
		if _, dup := b.byName[fn.Name]; !dup {
			b.byName[fn.Name] = fn
		}
		if e := Elide(fn.Name); e != fn.Name {
			b.elided[e] = append(b.elided[e], fn)
		}
	}
	if d, err := f.DWARF(); err == nil {
		b.dwarf = d
	}
	return b, nil
}

// textStart is the address of runtime.text, which pclntab entries (Go
// 1.18+) are relative to: the symbol when present, else the value in the
// pclntab header, else (a PIE whose header is relocated at load) the start
// of .text, where the Go linker puts runtime.text.
func (b *Binary) textStart(pcln []byte) uint64 {
	if syms, err := b.elf.Symbols(); err == nil {
		for _, s := range syms {
			if s.Name == "runtime.text" {
				return s.Value
			}
		}
	}
	if len(pcln) >= 8+3*8 && pcln[7] == 8 {
		if v := binary.LittleEndian.Uint64(pcln[8+2*8:]); v != 0 {
			return v
		}
	}
	if t := b.elf.Section(".text"); t != nil {
		return t.Addr
	}
	return 0
}

// FirstLoad returns the virtual address of the first PT_LOAD segment.
func (b *Binary) FirstLoad() uint64 {
	for _, p := range b.elf.Progs {
		if p.Type == elf.PT_LOAD {
			return p.Vaddr
		}
	}
	return 0
}

// Line returns the source file and line of pc (a link-time address), from
// the pclntab; line 0 when unknown.
func (b *Binary) Line(pc uint64) (file string, line int) {
	file, line, _ = b.tab.PCToLine(pc)
	return file, line
}

// Close releases the file.
func (b *Binary) Close() error { return b.elf.Close() }

// HasDWARF tells whether the executable kept its debug information.
func (b *Binary) HasDWARF() bool { return b.dwarf != nil }

// Func returns the function with exactly this name.
func (b *Binary) Func(name string) (*Func, bool) {
	f, ok := b.byName[name]
	return f, ok
}

// Match returns the functions whose names match pattern, a glob in which
// '*' matches any run of characters (also '/' and '.') and '?' any one;
// every other character, brackets included, matches itself. A generic
// function's instantiations are named with their shapes in the pclntab
// (pkg.F[go.shape.int]) and as the runtime prints them (pkg.F[...]):
// either form matches, the second all of them.
func (b *Binary) Match(pattern string) []*Func {
	if !strings.ContainsAny(pattern, "*?") {
		if f, ok := b.byName[pattern]; ok {
			return []*Func{f}
		}
		return b.elided[pattern]
	}
	var out []*Func
	for i := range b.Funcs {
		name := b.Funcs[i].Name
		if Glob(pattern, name) || Glob(pattern, Elide(name)) {
			out = append(out, &b.Funcs[i])
		}
	}
	return out
}

// Elide writes a name's type arguments as the runtime prints them:
// main.Sum[go.shape.int] becomes main.Sum[...].
func Elide(name string) string {
	i := strings.IndexByte(name, '[')
	if i < 0 {
		return name
	}
	var b strings.Builder
	depth := 0
	for _, r := range name {
		switch {
		case r == '[':
			if depth == 0 {
				b.WriteString("[...]")
			}
			depth++
		case r == ']' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Glob reports whether name matches pattern ('*' any run, '?' any one
// character, the rest literal).
func Glob(pattern, name string) bool {
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == name[n]):
			p++
			n++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case star >= 0:
			p = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// FileOffset converts a virtual address to the file offset uprobes take.
func (b *Binary) FileOffset(addr uint64) (uint64, error) {
	for _, p := range b.elf.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && addr >= p.Vaddr && addr < p.Vaddr+p.Filesz {
			return addr - p.Vaddr + p.Off, nil
		}
	}
	return 0, fmt.Errorf("address %#x is in no executable segment", addr)
}

// Code returns the machine code of fn.
func (b *Binary) Code(fn *Func) ([]byte, error) {
	for _, s := range b.elf.Sections {
		if s.Flags&elf.SHF_EXECINSTR != 0 && fn.Entry >= s.Addr && fn.End <= s.Addr+s.Size {
			code := make([]byte, fn.End-fn.Entry)
			if _, err := s.ReadAt(code, int64(fn.Entry-s.Addr)); err != nil {
				return nil, fmt.Errorf("reading %s: %w", fn.Name, err)
			}
			return code, nil
		}
	}
	return nil, fmt.Errorf("%s: code at %#x is in no executable section", fn.Name, fn.Entry)
}

// Similar returns up to max of the function names closest to name (by
// edit distance, the last element weighing most): suggestions for a name
// that matched nothing.
func (b *Binary) Similar(name string, max int) []string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	short := lastElem(name)
	for i := range b.Funcs {
		fn := b.Funcs[i].Name
		d := editDistance(name, fn)
		if lastElem(fn) == short {
			d = min(d, 1+editDistance(name, fn)/4)
		}
		if d <= max3(len(name)/3, 2) {
			cs = append(cs, cand{fn, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var out []string
	for _, c := range cs {
		if len(out) == max || c.d > cs[0].d {
			break
		}
		out = append(out, c.name)
	}
	return out
}

func max3(a, b int) int {
	if a > b {
		return a
	}
	return b
}

func lastElem(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of neighbours cost 1.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 1 << 20
	}
	var pprev []int
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], pprev[j-2]+1)
			}
		}
		pprev = append(pprev[:0], prev...)
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
