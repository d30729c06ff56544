package perfetto

import (
	"bufio"
	"encoding/json"
	"io"
	"math"
	"strconv"
)

// writeJSON writes the Chrome trace-event format: metadata events naming
// processes and threads, "X" complete events for slices, "i" instants,
// "C" counters and "s"/"f" flow events; times in microseconds since the
// earliest event (JSON numbers are doubles: absolute Unix microseconds
// would lose the nanoseconds). A lane beyond a thread's first is a thread
// of its own ("name (2)").
func (m *model) writeJSON(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	base := m.start()
	var b []byte
	n := 0
	emit := func() {
		if n > 0 {
			bw.WriteString(",\n")
		}
		n++
		bw.Write(b)
		b = b[:0]
	}
	bw.WriteString(`{"displayTimeUnit":"ns","otherData":{"startUnixNanos":"` + strconv.FormatInt(base, 10) + `"},"traceEvents":[` + "\n")
	for i, name := range m.procs {
		b = append(b, `{"ph":"M","name":"process_name","pid":`...)
		b = strconv.AppendUint(b, pid(i), 10)
		b = append(b, `,"args":{"name":`...)
		b = appendJSONString(b, name)
		b = append(b, "}}"...)
		emit()
	}
	tids := make([][]int, len(m.tracks))
	next := m.nextTID
	for ti, t := range m.tracks {
		for l := range t.nLanes {
			tid := t.tid
			if tid == 0 || l > 0 {
				next++
				tid = next
			}
			tids[ti] = append(tids[ti], tid)
			b = append(b, `{"ph":"M","name":"thread_name","pid":`...)
			b = strconv.AppendUint(b, pid(t.proc), 10)
			b = append(b, `,"tid":`...)
			b = strconv.AppendInt(b, int64(tid), 10)
			b = append(b, `,"args":{"name":`...)
			b = appendJSONString(b, laneName(t.name, l))
			b = append(b, "}}"...)
			emit()
		}
	}
	for ti, t := range m.tracks {
		for i := range t.items {
			it := &t.items[i]
			head := func(ph string, ts int64) {
				b = append(b, `{"ph":"`...)
				b = append(b, ph...)
				b = append(b, `","pid":`...)
				b = strconv.AppendUint(b, pid(t.proc), 10)
				b = append(b, `,"tid":`...)
				b = strconv.AppendInt(b, int64(tids[ti][t.lanes[i]]), 10)
				b = append(b, `,"ts":`...)
				b = appendMicros(b, ts-base)
			}
			if it.end >= 0 {
				head("X", it.start)
				b = append(b, `,"dur":`...)
				b = appendMicros(b, it.end-it.start)
			} else {
				head("i", it.start)
				b = append(b, `,"s":"t"`...)
			}
			b = append(b, `,"name":`...)
			b = appendJSONString(b, it.name)
			if a := m.args(it); len(a) > 0 {
				b = append(b, `,"args":{`...)
				b = append(b, a[1:]...) // each starts with a comma
				b = append(b, '}')
			}
			b = append(b, '}')
			emit()
			l := m.linksOf(it, false)
			for k, f := range [2][]uint64{l.out, l.in} {
				for _, id := range f {
					ph := "s" // a flow starts at a send, ends ("f") at a receipt
					if k == 1 {
						ph = "f"
					}
					head(ph, it.start)
					b = append(b, `,"cat":"flow","name":"message","bp":"e","id":`...)
					b = strconv.AppendUint(b, id, 10)
					b = append(b, '}')
					emit()
				}
			}
		}
	}
	for _, c := range m.counters {
		for _, pt := range c.points {
			b = append(b, `{"ph":"C","pid":`...)
			b = strconv.AppendUint(b, pid(c.proc), 10)
			b = append(b, `,"ts":`...)
			b = appendMicros(b, pt.t-base)
			b = append(b, `,"name":`...)
			b = appendJSONString(b, c.name)
			b = append(b, `,"args":{"value":`...)
			b = appendFloat(b, pt.v)
			b = append(b, "}}"...)
			emit()
		}
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
}

// appendMicros appends ns as microseconds with three decimals, exact.
func appendMicros(b []byte, ns int64) []byte {
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1000, 10)
	frac := ns % 1000
	b = append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	return b
}

func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// appendJSONArg appends `,"name":value`.
func appendJSONArg(b []byte, a arg) []byte {
	b = append(b, ',')
	b = appendJSONString(b, a.name)
	b = append(b, ':')
	switch a.kind {
	case 'i':
		return strconv.AppendInt(b, a.i, 10)
	case 'f':
		return appendFloat(b, a.f)
	}
	return appendJSONString(b, a.s)
}

// start returns the earliest timestamp of the trace.
func (m *model) start() int64 {
	t := int64(math.MaxInt64)
	for _, tr := range m.tracks {
		for _, it := range tr.items {
			t = min(t, it.start)
		}
	}
	for _, c := range m.counters {
		for _, p := range c.points {
			t = min(t, p.t)
		}
	}
	if t == math.MaxInt64 {
		return 0
	}
	return t
}
