package flow

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// InputsJSON is what a merge found about its inputs, in the --json
// reports.
type InputsJSON struct {
	Nodes                 []NodeJSON `json:"nodes"`
	MissingNodeNumbers    []uint16   `json:"missingNodeNumbers"`
	UnfinishedSpans       int64      `json:"unfinishedSpans"`
	IncompleteTraces      int        `json:"incompleteTraces"`
	Traces                int        `json:"traces"`
	ClockInconsistencies  int        `json:"clockInconsistencies"`
	CausalInconsistencies int64      `json:"causalInconsistencies"`
	MalformedSkipped      int        `json:"malformedSkipped"`
	Errors                []string   `json:"errors"`
}

// NodeJSON is one input of a merge.
type NodeJSON struct {
	Node          string `json:"node"`
	File          string `json:"file"`
	Number        *int   `json:"number"` // node part of its compact message IDs; null if unknown
	ClockOffsetNs int64  `json:"clockOffsetNs"`
}

// Inputs returns what the merge found about its inputs.
func (m *Merger) Inputs() InputsJSON {
	in := InputsJSON{MissingNodeNumbers: m.MissingNodes, UnfinishedSpans: m.UnfinishedSpans, IncompleteTraces: m.IncompleteTraces,
		Traces: m.TracesOut, ClockInconsistencies: m.ClockInconsistencies, CausalInconsistencies: m.CausalInconsistencies,
		MalformedSkipped: m.Warnings, Errors: []string{}}
	if in.MissingNodeNumbers == nil {
		in.MissingNodeNumbers = []uint16{}
	}
	for i, name := range m.Nodes {
		nj := NodeJSON{Node: name, File: m.Files[i]}
		if i < len(m.Numbers) && m.Numbers[i] >= 0 {
			n := m.Numbers[i]
			nj.Number = &n
		}
		if i < len(m.Offsets) {
			nj.ClockOffsetNs = m.Offsets[i]
		}
		in.Nodes = append(in.Nodes, nj)
	}
	for _, e := range m.Errors {
		in.Errors = append(in.Errors, e.Error())
	}
	return in
}

// WriteInputs writes the INPUTS report: per node its file, number and
// clock offset, then what limits the results: damage, missing nodes,
// unfinished spans, incomplete traces and clock inconsistencies.
func (m *Merger) WriteInputs(w io.Writer) error {
	in := m.Inputs()
	var b strings.Builder
	b.WriteString("\n**********\n* INPUTS *\n**********\n")
	for _, n := range in.Nodes {
		num := "number unknown"
		if n.Number != nil {
			num = "number " + strconv.Itoa(*n.Number)
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\tclock offset %s\n", n.Node, n.File, num, formatNs(n.ClockOffsetNs))
	}
	if len(in.MissingNodeNumbers) > 0 {
		nums := make([]string, len(in.MissingNodeNumbers))
		for i, n := range in.MissingNodeNumbers {
			nums[i] = strconv.Itoa(int(n))
		}
		fmt.Fprintf(&b, "Nodes without input (numbers seen in message IDs): %s\n", strings.Join(nums, ", "))
	}
	fmt.Fprintf(&b, "%d traces, %d incomplete (spans of their messages are missing or damaged), %d unfinished spans (open when recording stopped)\n",
		in.Traces, in.IncompleteTraces, in.UnfinishedSpans)
	fmt.Fprintf(&b, "Clocks: %d message pairs no offsets satisfy, %d receipts placed before their send\n",
		in.ClockInconsistencies, in.CausalInconsistencies)
	if in.MalformedSkipped > 0 {
		fmt.Fprintf(&b, "%d malformed lines or records skipped\n", in.MalformedSkipped)
	}
	for _, e := range in.Errors {
		fmt.Fprintf(&b, "Damage: %s\n", e)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// formatNs prints a duration with the precision that matters: ns below
// 1 us, us with up to 3 decimals below 1 ms, ms with 3 decimals (1 us)
// above.
func formatNs(ns int64) string {
	a := ns
	if a < 0 {
		a = -a
	}
	switch {
	case a < 1000:
		return strconv.FormatInt(ns, 10) + " ns"
	case a < 1_000_000:
		return strconv.FormatFloat(float64(ns)/1e3, 'f', 3, 64) + " us"
	}
	return strconv.FormatFloat(float64(ns)/1e6, 'f', 3, 64) + " ms"
}
