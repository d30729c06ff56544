package gobin

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"
)

const prog = `package main

//go:noinline
func twoReturns(n int) int {
	if n%3 == 0 {
		return n * 2
	}
	return n + 1
}

//go:noinline
func bigFrame(n int) int {
	var buf [4096]byte
	buf[n%4096] = byte(n)
	return int(buf[(n+1)%4096]) + twoReturns(n)
}

//go:noinline
func leaf(n int) int { return n + 1 }

//go:noinline
func Sum[T int | float64](xs ...T) T {
	var s T
	for _, x := range xs {
		s += x
	}
	return s
}

func main() { println(bigFrame(3)+leaf(1)+Sum(1, 2), Sum(1.5, 2.5)) }
`

// build compiles prog with the given toolchain ("" for the current one)
// and extra flags, for linux/amd64.
func build(t *testing.T, toolchain string, flags ...string) string {
	t.Helper()
	return buildArch(t, "amd64", toolchain, flags...)
}

// buildArch builds prog for linux/goarch, whatever the test runs on (the
// arm64 tests also run under qemu-user).
func buildArch(t *testing.T, goarch, toolchain string, flags ...string) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(prog), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module p\n\ngo 1.21\n"), 0o644)
	out := filepath.Join(dir, "p")
	cmd := exec.Command("go", append(append([]string{"build", "-o", out}, flags...), ".")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch)
	if toolchain != "" {
		cmd.Env = append(cmd.Env, "GOTOOLCHAIN="+toolchain)
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		if toolchain != "" {
			t.Skipf("toolchain %s not available: %v\n%s", toolchain, err, b)
		}
		t.Fatalf("%v\n%s", err, b)
	}
	return out
}

func open(t *testing.T, path string) *Binary {
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestGoidOffsetTable checks the table used for stripped binaries against
// the DWARF of binaries built by the oldest release supported, one of each
// offset, and the current one (each toolchain is a download and a build of
// its runtime on a cold cache; all of go1.21-go1.26 were checked when the
// table was written).
func TestGoidOffsetTable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds with several toolchains")
	}
	for _, tc := range []string{"go1.21.13", "go1.23.12", ""} {
		t.Run(tc, func(t *testing.T) {
			b := open(t, build(t, tc))
			fromDWARF, ok := b.dwarfGoidOffset()
			if !ok {
				t.Fatal("no runtime.g.goid in DWARF")
			}
			stripped := open(t, build(t, tc, "-ldflags=-s -w"))
			if stripped.HasDWARF() {
				t.Fatal("-w left DWARF")
			}
			fromTable, err := stripped.GoidOffset()
			if err != nil || fromTable != fromDWARF {
				t.Errorf("%s: table gives %d (%v), DWARF %d", b.GoVersion, fromTable, err, fromDWARF)
			}
		})
	}
}

// TestSites checks the probe sites: the entry after the stack-bound check
// (PUSHQ BP) whatever the frame size, the first instruction of a function
// without the check, and every RET.
func TestSites(t *testing.T) {
	for _, flags := range [][]string{nil, {"-ldflags=-s -w"}, {"-buildmode=pie"}} {
		b := open(t, build(t, "", flags...))
		for name, rets := range map[string]int{"main.twoReturns": 2, "main.bigFrame": 1, "main.leaf": 1} {
			fn, ok := b.Func(name)
			if !ok {
				t.Fatalf("%v: no %s", flags, name)
			}
			s, err := b.Sites(fn)
			if err != nil {
				t.Fatal(err)
			}
			code, _ := b.Code(fn)
			at := func(addr uint64) x86asm.Inst {
				inst, err := x86asm.Decode(code[addr-fn.Entry:], 64)
				if err != nil {
					t.Fatal(err)
				}
				return inst
			}
			if name != "main.bigFrame" { // leaves with small frames have no check
				if s.Entry != fn.Entry {
					t.Errorf("%v %s: entry probe at +%d, want +0 (no stack check)", flags, name, s.Entry-fn.Entry)
				}
			} else if inst := at(s.Entry); inst.Op != x86asm.PUSH || s.Entry == fn.Entry {
				t.Errorf("%v %s: entry probe on %v at +%d, want the PUSHQ BP after the check", flags, name, inst, s.Entry-fn.Entry)
			}
			if len(s.Returns) != rets {
				t.Errorf("%v %s: %d RETs, want %d", flags, name, len(s.Returns), rets)
			}
			for _, r := range s.Returns {
				if at(r).Op != x86asm.RET {
					t.Errorf("%v %s: return probe on %v", flags, name, at(r))
				}
			}
			off, err := b.FileOffset(s.Entry)
			if err != nil {
				t.Fatal(err)
			}
			file, _ := os.ReadFile(b.Path)
			if string(file[off:off+4]) != string(code[s.Entry-fn.Entry:][:4]) {
				t.Errorf("%v %s: file offset %#x does not hold the code", flags, name, off)
			}
		}
	}
}

// TestSitesArm64 finds the probe sites of arm64 executables: every RET,
// and the instruction after the stack check (LDR 16(X28); CMP; B.LS).
func TestSitesArm64(t *testing.T) {
	for _, flags := range [][]string{nil, {"-ldflags=-s -w"}, {"-buildmode=pie"}} {
		b := open(t, buildArch(t, "arm64", "", flags...))
		if b.Arch != "arm64" {
			t.Fatalf("%v: arch %q", flags, b.Arch)
		}
		for name, rets := range map[string]int{"main.twoReturns": 2, "main.bigFrame": 1, "main.leaf": 1} {
			fn, ok := b.Func(name)
			if !ok {
				t.Fatalf("%v: no %s", flags, name)
			}
			s, err := b.Sites(fn)
			if err != nil {
				t.Fatal(err)
			}
			code, _ := b.Code(fn)
			at := func(addr uint64) arm64asm.Inst {
				inst, err := arm64asm.Decode(code[addr-fn.Entry:])
				if err != nil {
					t.Fatal(err)
				}
				return inst
			}
			if name != "main.bigFrame" {
				if s.Entry != fn.Entry {
					t.Errorf("%v %s: entry probe at +%d, want +0 (no stack check)", flags, name, s.Entry-fn.Entry)
				}
			} else if s.Entry == fn.Entry {
				t.Errorf("%v %s: entry probe at +0, want the instruction after the stack check", flags, name)
			} else if prev := at(s.Entry - 4); prev.Op != arm64asm.B || prev.Args[0].String() != "LS" {
				t.Errorf("%v %s: entry probe at +%d after %v, want the instruction after the check's B.LS", flags, name, s.Entry-fn.Entry, prev)
			}
			if len(s.Returns) != rets {
				t.Errorf("%v %s: %d RETs, want %d", flags, name, len(s.Returns), rets)
			}
			for _, r := range s.Returns {
				if at(r).Op != arm64asm.RET {
					t.Errorf("%v %s: return probe on %v", flags, name, at(r))
				}
			}
			off, err := b.FileOffset(s.Entry)
			if err != nil {
				t.Fatal(err)
			}
			file, _ := os.ReadFile(b.Path)
			if string(file[off:off+4]) != string(code[s.Entry-fn.Entry:][:4]) {
				t.Errorf("%v %s: file offset %#x does not hold the code", flags, name, off)
			}
		}
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"main.*", "main.work", true},
		{"net/http.*", "net/http.(*conn).serve", true},
		{"*.serve", "net/http.(*conn).serve", true},
		{"main.wor?", "main.work", true},
		{"main.w*k", "main.work", true},
		{"main.*", "mainx.work", false},
		{"pkg.F[go.shape.int]", "pkg.F[go.shape.int]", true},
		{"pkg.F[go.shape.int]", "pkg.Fg", false},
		{"*", "", true},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
	} {
		if got := Glob(c.pattern, c.name); got != c.want {
			t.Errorf("Glob(%q, %q) = %v", c.pattern, c.name, got)
		}
	}
}

func TestGenericNames(t *testing.T) {
	b := open(t, build(t, ""))
	names := func(fs []*Func) string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Name)
		}
		return strings.Join(out, " ")
	}
	for pattern, want := range map[string]string{
		"main.Sum[...]":           "main.Sum[go.shape.float64] main.Sum[go.shape.int]",
		"main.Sum[go.shape.int]":  "main.Sum[go.shape.int]",
		"main.S*":                 "main.Sum[go.shape.float64] main.Sum[go.shape.int]",
		"main.Sum[...]x":          "",
		"main.Sum[go.shape.int]*": "main.Sum[go.shape.int]",
	} {
		if got := names(b.Match(pattern)); got != want {
			t.Errorf("Match(%q) = %q, want %q", pattern, got, want)
		}
	}
	for name, want := range map[string]string{
		"main.Sum[go.shape.int]":                 "main.Sum[...]",
		"main.(*List[go.shape.int]).Push":        "main.(*List[...]).Push",
		"main.F[go.shape.[]int,go.shape.string]": "main.F[...]",
		"main.plain":                             "main.plain",
	} {
		if got := Elide(name); got != want {
			t.Errorf("Elide(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestSimilarAndInlined(t *testing.T) {
	b := open(t, build(t, ""))
	if got := b.Similar("main.twoReturn", 3); strings.Join(got, ",") != "main.twoReturns" {
		t.Errorf("Similar(main.twoReturn) = %v", got)
	}
	if got := b.Similar("main.laef", 3); strings.Join(got, ",") != "main.leaf" {
		t.Errorf("Similar(main.laef) = %v", got)
	}
	if into := b.InlinedInto("main.bigFrame"); into != nil {
		t.Errorf("main.bigFrame is not inlined, got %v", into)
	}
	if _, err := Open("/bin/sh"); err == nil || !strings.Contains(err.Error(), "not a Go executable") {
		t.Errorf("Open(/bin/sh): %v", err)
	}
}

// TestOpenNotELF opens files that are not ELF executables: the error names
// the file and says it is not one (ErrNotELF), with what it is where that
// is known, not debug/elf's "bad magic number '[70 76 82 0]' in record at
// byte 0x0" or "EOF".
func TestOpenNotELF(t *testing.T) {
	dir := t.TempDir()
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Skip(err)
	}
	for _, c := range []struct {
		name, data, want string
		notELF           bool
	}{
		{"text.txt", "hello\n", "not an ELF executable", true},
		{"empty", "", "not an ELF executable (an empty file)", true},
		{"rec.jfr", "FLR\x00\x00\x02\x00\x01 rest of a chunk header", "not an ELF executable (a JDK Flight Recorder recording)", true},
		{"macho", "\xcf\xfa\xed\xfe\x07\x00\x00\x01 rest of a Mach-O header", "not an ELF executable (a Mach-O file)", true},
		{"prog.exe", "MZ\x90\x00 rest of a PE header", "not an ELF executable (a PE/Windows file)", true},
		{"dir", "", "not an ELF executable (a directory)", true},
		{"cut", string(self[:100]), "truncated ELF file", false},
	} {
		path := filepath.Join(dir, c.name)
		if c.name == "dir" {
			os.Mkdir(path, 0o755)
		} else if err := os.WriteFile(path, []byte(c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(path)
		if want := path + ": " + c.want; err == nil || err.Error() != want || errors.Is(err, ErrNotELF) != c.notELF {
			t.Errorf("%s: error %v, want %q (ErrNotELF %v)", c.name, err, want, c.notELF)
		}
	}
}
