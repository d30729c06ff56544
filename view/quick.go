package view

import (
	"fmt"
	"runtime"
	"sort"

	"github.com/flightrec/flightrec/internal/jfrtool"
)

// quickSummary is /api/summary while the index is being built: each
// type's records and bytes per file, from the record headers alone (what
// `flightrec summary` reads).
type quickSummary struct {
	Indexing bool          `json:"indexing"`
	Files    []quickFile   `json:"files"`
	Types    []summaryType `json:"types"`
	Start    int64         `json:"start"`
	End      int64         `json:"end"`
	Events   int64         `json:"events"`
}

type quickFile struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
	Chunks int    `json:"chunks"`
}

func summarize(ix *Index) (*quickSummary, error) {
	q := &quickSummary{Indexing: true}
	byName := map[string]*summaryType{}
	for fi, f := range ix.Files {
		q.Files = append(q.Files, quickFile{f.Name, f.Size, f.Start, f.End, len(f.chunks)})
		if fi == 0 || f.Start < q.Start {
			q.Start = f.Start
		}
		q.End = max(q.End, f.End)
		s, err := jfrtool.SummarizeAt(f.reader(), f.Size, runtime.GOMAXPROCS(0))
		if err != nil {
			return nil, fileError(f.Name, err)
		}
		for _, row := range s.Rows {
			if row.Count == 0 || row.Name == "jdk.Metadata" || row.Name == "jdk.CheckPoint" {
				continue
			}
			t := byName[row.Name]
			if t == nil {
				t = &summaryType{Name: row.Name, PerFile: make([]int64, len(ix.Files))}
				byName[row.Name] = t
			}
			t.Count += row.Count
			t.Bytes += row.Size
			t.PerFile[fi] += row.Count
			q.Events += row.Count
		}
	}
	for _, t := range byName {
		q.Types = append(q.Types, *t)
	}
	sort.Slice(q.Types, func(i, j int) bool { return q.Types[i].Name < q.Types[j].Name })
	return q, nil
}

func fileError(name string, err error) error { return fmt.Errorf("%s: %w", name, err) }
