package bpf

import (
	"encoding/binary"
	"testing"
)

func TestDecode(t *testing.T) {
	l := Layout{StrLen: 16, StrSlots: 2, StackDepth: 4}
	b := make([]byte, l.Size())
	le := binary.LittleEndian
	le.PutUint32(b[offProbe:], 3)
	le.PutUint32(b[offKind:], 1)
	le.PutUint64(b[offGoid:], 42)
	le.PutUint64(b[offStart:], 1000)
	le.PutUint64(b[offEnd:], 1500)
	le.PutUint64(b[offCaller:], 0x401000)
	for i := 0; i < NumIntRegs; i++ {
		le.PutUint64(b[offArgs+8*i:], uint64(i+1))
		le.PutUint64(b[offResults+8*i:], uint64(100+i))
	}
	copy(b[offStrings:], "hello")
	copy(b[offStrings+16:], "world")
	le.PutUint64(b[offStackLen:], 16) // two frames
	le.PutUint64(b[l.stackOff():], 0x402000)
	le.PutUint64(b[l.stackOff()+8:], 0x403000)
	var r Record
	if err := l.Decode(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Probe != 3 || !r.Return || r.Goid != 42 || r.Start != 1000 || r.End != 1500 || r.Caller != 0x401000 {
		t.Errorf("header %+v", r)
	}
	if r.Args[0] != 1 || r.Args[8] != 9 || r.Results[0] != 100 || r.Results[8] != 108 {
		t.Errorf("registers %v %v", r.Args, r.Results)
	}
	if string(r.Strings[0][:5]) != "hello" || string(r.Strings[1][:5]) != "world" || len(r.Strings[0]) != 16 {
		t.Errorf("strings %q", r.Strings)
	}
	if len(r.Stack) != 2 || r.Stack[1] != 0x403000 {
		t.Errorf("stack %x", r.Stack)
	}
	// A negative bpf_get_stack result (an error) gives no stack; a short
	// record is an error, not a panic.
	le.PutUint64(b[offStackLen:], uint64(1<<64-14))
	if err := l.Decode(b, &r); err != nil || len(r.Stack) != 0 {
		t.Errorf("failed stack: %v %x", err, r.Stack)
	}
	if err := l.Decode(b[:l.Size()-1], &r); err == nil {
		t.Error("short record decoded")
	}
}
