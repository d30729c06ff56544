package gobin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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

func main() { println(bigFrame(3) + leaf(1)) }
`

// build compiles prog with the given toolchain ("" for the current one)
// and extra flags.
func build(t *testing.T, toolchain string, flags ...string) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(prog), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module p\n\ngo 1.21\n"), 0o644)
	out := filepath.Join(dir, "p")
	cmd := exec.Command("go", append(append([]string{"build", "-o", out}, flags...), ".")...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
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
// the DWARF of binaries built by each release that can be fetched.
func TestGoidOffsetTable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds with several toolchains")
	}
	for _, tc := range []string{"go1.21.13", "go1.22.12", "go1.23.12", "go1.24.13", "go1.25.5", ""} {
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
