package flow

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flightrec/flightrec/internal/flowspec"
)

// MessageLine is one line under a TRACE header: who sent a message and who
// handled it.
type MessageLine struct {
	ID   string
	From string   // node of a causal send, "-unknown-" if none
	To   []string // nodes of every handling, repeated, sorted; "-nobody-" if none
}

// MessageLines returns the message lines of a trace, sorted by ID.
func (t *Trace) MessageLines() []MessageLine {
	from := make(map[int32]string)
	to := make(map[int32][]string)
	for i := range t.Events {
		e := &t.Events[i]
		switch {
		case e.Kind == flowspec.SendStarted && e.Msg >= 0:
			if _, ok := from[e.Msg]; !ok {
				from[e.Msg] = t.NodeName(e)
			}
		case e.Kind == flowspec.HandleStart && e.Msg >= 0:
			to[e.Msg] = append(to[e.Msg], t.NodeName(e))
		}
	}
	lines := make([]MessageLine, 0, len(t.Messages))
	for _, k := range t.Messages {
		l := MessageLine{ID: t.MessageID(k), From: from[k], To: to[k]}
		if l.From == "" {
			l.From = "-unknown-"
		}
		slices.Sort(l.To)
		if len(l.To) == 0 {
			l.To = []string{"-nobody-"}
		}
		lines = append(lines, l)
	}
	return lines
}

// Payload returns the text printed after an event's type: its message ID
// or its text.
func (t *Trace) Payload(e *Event) string {
	if e.Msg >= 0 {
		return t.MessageID(e.Msg)
	}
	return e.Text
}

// KindName returns the trace-log name of an event's kind.
func KindName(k flowspec.Kind) string { return flowspec.LogName[k] }

// WriteTrace writes a trace in the reference tool's trace-log layout, at
// microsecond precision:
//
//	TRACE <n>: <k> msg
//	<src>\t-> <dst>, ...:\t<id>
//	duration <d>, critical path <node> -> <node> ...
//	HH:mm:ss.SSSSSS|<wall delta> ms|<local delta>|<thread graph>|node|thread|Type payload
//
// Times are UTC, corrected by the node's clock offset; the wall delta is
// to the previous line, in ms with 3 decimals.
func WriteTrace(w io.Writer, t *Trace) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "TRACE %d: %d msg\n", t.Index, len(t.Messages))
	for _, l := range t.MessageLines() {
		fmt.Fprintf(bw, "%s\t-> %s:\t%s\n", l.From, strings.Join(l.To, ", "), l.ID)
	}
	fmt.Fprintf(bw, "duration %s, critical path %s\n", formatNs(t.Duration()), t.criticalPathText())
	if t.Inconsistencies > 0 {
		fmt.Fprintf(bw, "%d causal inconsistencies detected\n", t.Inconsistencies)
	}
	if t.UnfinishedSpans > 0 {
		fmt.Fprintf(bw, "%d unfinished spans (open when recording stopped)\n", t.UnfinishedSpans)
	}
	evs := t.Events
	// Columns: one per node|thread, sorted.
	type col struct{ node, thread uint32 }
	colOf := make(map[col]int)
	var cols []col
	nodeW, threadW := 0, 0
	for i := range evs {
		c := col{uint32(evs[i].Node), evs[i].Thread}
		if _, ok := colOf[c]; !ok {
			colOf[c] = 0
			cols = append(cols, c)
		}
		nodeW = max(nodeW, len(t.NodeName(&evs[i])))
		threadW = max(threadW, len(t.ThreadName(&evs[i])))
	}
	m := t.m
	slices.SortFunc(cols, func(a, b col) int {
		return strings.Compare(m.Nodes[a.node]+"|"+m.Threads[a.node][a.thread], m.Nodes[b.node]+"|"+m.Threads[b.node][b.thread])
	})
	for i, c := range cols {
		colOf[c] = i
	}
	// more[i]: the same thread has later events in the same span.
	more := make([]bool, len(evs))
	type key struct {
		node, thread, span uint32
	}
	seen := make(map[key]bool)
	for i := len(evs) - 1; i >= 0; i-- {
		k := key{uint32(evs[i].Node), evs[i].Thread, evs[i].Span}
		more[i] = seen[k]
		seen[k] = true
	}
	// Width of the wall delta.
	width := 1
	for i := 1; i < len(evs); i++ {
		width = max(width, len(wallDelta(evs[i].Wall-evs[i-1].Wall)))
	}
	lastNano := make(map[uint16]int64)
	colLast := make([]int, len(cols)) // index of each column's last printed event, -1
	for i := range colLast {
		colLast[i] = -1
	}
	graph := make([]byte, len(cols))
	for i := range evs {
		e := &evs[i]
		bw.WriteString(time.Unix(0, e.Wall).UTC().Format("15:04:05.000000"))
		if i == 0 {
			fmt.Fprintf(bw, "|%s", strings.Repeat(" ", width+3))
		} else {
			fmt.Fprintf(bw, "|%*s ms", width, wallDelta(e.Wall-evs[i-1].Wall))
		}
		if last, ok := lastNano[e.Node]; ok {
			bw.WriteString("|" + localDelta(e.Nano-last) + "|")
		} else {
			bw.WriteString("|       |")
		}
		lastNano[e.Node] = e.Nano
		me := colOf[col{uint32(e.Node), e.Thread}]
		for c := range cols {
			switch {
			case c == me:
				graph[c] = '*'
			case colLast[c] >= 0 && more[colLast[c]]:
				graph[c] = '.'
			default:
				graph[c] = ' '
			}
		}
		colLast[me] = i
		bw.Write(graph)
		fmt.Fprintf(bw, "|%-*s|%-*s|%s", nodeW, t.NodeName(e), threadW, t.ThreadName(e), KindName(e.Kind))
		if p := t.Payload(e); p != "" {
			bw.WriteString(" " + p)
		}
		bw.WriteByte('\n')
	}
	bw.WriteByte('\n')
	return bw.Flush()
}

// wallDelta prints a wall-time difference in ms with microsecond
// precision.
func wallDelta(ns int64) string { return strconv.FormatFloat(float64(ns)/1e6, 'f', 3, 64) }

// msOf truncates a wall time to whole milliseconds, as the reference tool
// stores it.
func msOf(ns int64) int64 {
	if ns < 0 && ns%1e6 != 0 {
		return ns/1e6 - 1
	}
	return ns / 1e6
}

// localDelta formats a duration in the reference tool's 7-character cell.
// The one-decimal forms switch at 99.95 rather than 100 so that no cell
// reads "100.0" (the reference's 2013 thresholds print it; its 2016
// version moved them the same way).
func localDelta(ns int64) string {
	f := float64(ns)
	switch {
	case ns < 10_000:
		return fmt.Sprintf("%4d ns", ns)
	case f < 99_950:
		return fmt.Sprintf("%2.1f us", f/1e3)
	case ns < 10_000_000:
		return fmt.Sprintf("%4d us", ns/1e3)
	case f < 99_950_000:
		return fmt.Sprintf("%2.1f ms", f/1e6)
	case ns < 10_000_000_000:
		return fmt.Sprintf("%4d ms", ns/1e6)
	case f < 99_950_000_000:
		return fmt.Sprintf("%2.1f  s", f/1e9)
	}
	return fmt.Sprintf("%4d  s", ns/1e9)
}
