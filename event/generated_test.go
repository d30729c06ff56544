package event_test

import (
	"bytes"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/event/eventimpl"
	"github.com/flightrec/flightrec/internal/batch"
	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/internal/pin"
)

//go:generate go run ../cmd/flightrec gen -type genAll,genTimed

type label string

// genAll has a field of every kind; genAll_flightrec_test.go holds its
// generated Commit.
type genAll struct {
	event.Instant
	B    bool
	I8   int8
	U8   uint8
	I16  int16
	U16  uint16
	I32  int32
	U32  uint32
	I64  int64
	U64  uint64
	I    int
	U    uint
	P    uintptr
	F32  float32
	F64  float64
	S    string
	L    label
	D    time.Duration
	T    time.Time
	TS   int64 `content:"timestamp"`
	G    event.Goroutine
	Fn   event.Func
	Skip int `jfr:"-"`
	Last int32
}

type genTimed struct {
	event.Timed
	N int64 `content:"bytes"`
	S string
}

var (
	genAllType   = event.Define[genAll](event.Info{Name: "test.GenAll"})
	genTimedType = event.Define[genTimed](event.Info{Name: "test.GenTimed"})
)

// session makes the emit path record into buffers of a session of its
// own, on one P, with the named types on.
func session(t *testing.T, names ...string) *batch.Session {
	t.Helper()
	prev := runtime.GOMAXPROCS(1)
	t.Cleanup(func() {
		batch.Activate(nil)
		runtime.GOMAXPROCS(prev)
	})
	s := batch.NewSession(4, 4)
	batch.Activate(s)
	t.Cleanup(s.Release)
	types, _ := batch.Types()
	for _, d := range types {
		for _, n := range names {
			if d.Name == n {
				d.On.Store(true)
				t.Cleanup(func() { d.On.Store(false) })
			}
		}
	}
	return s
}

// records returns the records published in s's buffers since the last
// call. (Under the race detector, pin hands out slots, not Ps, and
// consecutive events may land in different buffers.)
func records(t *testing.T, s *batch.Session) [][]byte {
	t.Helper()
	var out [][]byte
	s.Live(func(b *batch.Buffer) {
		data := b.Take().Records
		for len(data) > 0 {
			size, n := leb128.Uvarint(data)
			if n <= 0 || size == 0 || size > uint64(len(data)) {
				t.Fatalf("bad record size %d at % x", size, data)
			}
			out = append(out, data[:size])
			data = data[size:]
		}
	})
	return out
}

// untimed returns the record's fields after its time and duration (if
// timed), and the lengths of its size prefix and type id.
func untimed(t *testing.T, rec []byte, timed bool) ([]byte, [2]int) {
	t.Helper()
	var head [2]int
	rest := rec
	for i := range 4 {
		if i == 3 && !timed {
			break
		}
		_, n := leb128.Uvarint(rest)
		if n <= 0 {
			t.Fatalf("truncated record % x", rec)
		}
		if i < 2 {
			head[i] = n
		}
		rest = rest[n:]
	}
	return rest, head
}

// TestGeneratedMatchesGeneric checks that the generated Commit methods
// write the records the generic one does, byte for byte, for every field
// kind, inline and pooled strings, and extreme values.
func TestGeneratedMatchesGeneric(t *testing.T) {
	s := session(t, "test.GenAll", "test.GenTimed")
	at := time.Now().Add(-time.Second)
	fn := event.FuncOf(fmt.Println)
	fill := func(ev *genAll, s string, big bool) {
		*ev = genAll{Instant: ev.Instant, B: true, I8: -1, U8: 200, I16: -2, U16: 60000, I32: -3, U32: 4e9,
			I64: -4, U64: 1<<63 + 5, I: -5, U: 6, P: 7, F32: 1.5, F64: -2.25, S: s, L: label(s),
			D: time.Millisecond, T: at, TS: at.UnixNano(), G: event.CurrentGoroutine(), Fn: fn, Skip: 9, Last: -1 << 30}
		if big {
			ev.S = strings.Repeat(s, 40) // a record over 127 bytes
		}
	}
	emitAll := func(s string, big, generated bool) {
		var ev genAll
		genAllType.Begin(&ev)
		ev.SetTime(at)
		fill(&ev, s, big)
		if generated {
			ev.Commit()
		} else {
			ev.Instant.Commit()
		}
	}
	emitTimed := func(s string, generated bool) {
		var ev genTimed
		genTimedType.Begin(&ev)
		ev.SetTimes(at, at.Add(time.Millisecond))
		ev.N, ev.S = -1, s
		if generated {
			ev.Commit()
		} else {
			ev.Timed.Commit()
		}
	}
	// Pool "pooled" first: a string seen twice at the same address.
	emitAll("pooled", false, false)
	emitAll("pooled", false, false)
	records(t, s)
	for _, tc := range []struct {
		name string
		emit func(generated bool)
	}{
		{"inline strings", func(g bool) { emitAll(strings.Clone("inline"), false, g) }},
		{"pooled strings", func(g bool) { emitAll("pooled", false, g) }},
		{"empty strings", func(g bool) { emitAll("", false, g) }},
		{"large record", func(g bool) { emitAll(strings.Clone("x"), true, g) }},
		{"timed", func(g bool) { emitTimed(strings.Clone("t"), g) }},
	} {
		if tc.name == "pooled strings" && !pin.Linked {
			// Under -race, pin hands out slots by stack address: the two
			// events may land in buffers that pooled different strings.
			continue
		}
		if tc.name == "pooled strings" {
			// Pool it again: the buffer's string cache is direct-mapped,
			// and an earlier case's string at another address may have
			// taken its slot (CI saw the generated record write it inline
			// and the generic one refer to it).
			emitAll("pooled", false, false)
			emitAll("pooled", false, false)
			records(t, s)
		}
		tc.emit(true)
		tc.emit(false)
		recs := records(t, s)
		if len(recs) != 2 {
			t.Fatalf("%s: %d records, want 2", tc.name, len(recs))
		}
		// SetTime's conversion to ticks reads the clock: the times may
		// differ by a tick.
		timed := tc.name == "timed"
		gen, gHead := untimed(t, recs[0], timed)
		gnr, rHead := untimed(t, recs[1], timed)
		if gHead != rHead || !bytes.Equal(gen, gnr) {
			t.Errorf("%s: generated record\n% x\ndiffers from generic\n% x", tc.name, recs[0], recs[1])
		}
	}
}

func TestGeneratedStale(t *testing.T) {
	want := "instant B:bool I8:int8 U8:uint8 I16:int16 U16:uint16 I32:int32 U32:uint32 I64:int64 U64:uint64 " +
		"I:int U:uint P:uintptr F32:float32 F64:float64 S:string L:string D:int64 T:time TS:int64@timestamp " +
		"G:goroutine Fn:func Last:int32"
	if got := eventimpl.Schema(reflect.TypeFor[genAll]()); got != want {
		t.Errorf("Schema = %q, want %q", got, want)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "run go generate") {
			t.Errorf("Generated with another schema: recovered %v, want a panic asking for go generate", r)
		}
	}()
	eventimpl.Check[genTimed]("timed S:string N:int64")
}
