package flow

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/flightrec/flightrec/internal/flowspec"
)

// Cut writes the spans of trace t as one 2013 text span log per node,
// dir/<node>.txt, and returns the file names. Merging the files again
// gives the same trace: node names come from the file names (the
// reference named them <node>.for.<message>, which does not read back as
// the node), non-causal sends stay in NC spans (the reference made them
// causal sends), and the header pins the clock with the corrected wall
// time to the nanosecond (the reference rounded it to the millisecond) and
// says the times are corrected (CorrectedClockLine), so that merging the
// cut does not estimate offsets again from one trace's messages.
func Cut(t *Trace, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	byNode := make(map[uint16][]*Event)
	var nodes []uint16
	for i := range t.Events {
		e := &t.Events[i]
		if _, ok := byNode[e.Node]; !ok {
			nodes = append(nodes, e.Node)
		}
		byNode[e.Node] = append(byNode[e.Node], e)
	}
	slices.SortFunc(nodes, func(a, b uint16) int { return strings.Compare(t.m.Nodes[a], t.m.Nodes[b]) })
	var files []string
	for _, n := range nodes {
		name := filepath.Join(dir, t.m.Nodes[n]+".txt")
		if err := writeCut(t, byNode[n], name); err != nil {
			return files, err
		}
		files = append(files, name)
	}
	return files, nil
}

func writeCut(t *Trace, evs []*Event, name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	// Spans in the order the node wrote them.
	var spans []uint32
	bySpan := make(map[uint32][]*Event)
	for _, e := range evs {
		if _, ok := bySpan[e.Span]; !ok {
			spans = append(spans, e.Span)
		}
		bySpan[e.Span] = append(bySpan[e.Span], e)
	}
	slices.Sort(spans)
	// Header: a nanoTime whose corrected wall time is a whole millisecond.
	e0 := evs[0]
	rem := e0.Wall % 1e6
	if rem < 0 {
		rem += 1e6
	}
	fmt.Fprintf(w, "%d=%d\n%s\n", e0.Nano-rem, (e0.Wall-rem)/1e6, CorrectedClockLine)
	for _, s := range spans {
		ses := bySpan[s]
		slices.SortStableFunc(ses, func(a, b *Event) int { return cmp.Compare(int64(a.Seq), int64(b.Seq)) })
		nc := ses[0].Ordinal == 0 && ses[0].Kind == flowspec.NonCausalSend
		in := "null"
		var outs []string
		for _, e := range ses {
			switch {
			case (e.Kind == flowspec.HandleStart || e.Kind == flowspec.Discard) && e.Msg >= 0 && in == "null" && !nc:
				in = t.MessageID(e.Msg)
			case isSend(e.Kind) && e.Msg >= 0:
				if id := t.MessageID(e.Msg); !slices.Contains(outs, id) {
					outs = append(outs, id)
				}
			}
		}
		head := "SPAN"
		if nc {
			head = "NC"
		}
		w.WriteString(head + ";" + in)
		for _, o := range outs {
			w.WriteString(";" + o)
		}
		w.WriteByte('\n')
		for _, e := range ses {
			kind := KindName(e.Kind)
			if e.Kind == flowspec.NonCausalSend {
				kind = flowspec.LogName[flowspec.SendStarted]
			}
			w.WriteString("E;" + strconv.FormatInt(e.Nano, 10) + ";" + t.ThreadName(e) + ";" + kind)
			if p := t.Payload(e); p != "" {
				w.WriteString(";" + p)
			}
			w.WriteByte('\n')
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
