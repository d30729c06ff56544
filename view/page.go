package view

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/flightrec/flightrec/jfr"
)

// PageOptions selects a page of the event browser's table.
type PageOptions struct {
	Offset, Limit int
	Sort          string // a field name; "" keeps time order
	Desc          bool
	Search        string // rows whose cells contain it, case-insensitively
}

// Page is a page of rows of one event type.
type Page struct {
	Fields []FieldInfo `json:"fields"`
	Total  int         `json:"total"`  // rows the filter keeps
	Capped bool        `json:"capped"` // sorting or search looked at the first maxScan events only
	Rows   []Row       `json:"rows"`
}

// Row is one event: its id (for /api/event) and a cell per field.
type Row struct {
	ID    int32    `json:"id"`
	Cells []string `json:"cells"`
}

// Page returns rows of type t. Without sorting or search only the page's
// events are decoded.
func (ix *Index) Page(t *Type, f Filter, o PageOptions) (*Page, error) {
	var ids []int32
	ix.each(t, f, func(e int32) { ids = append(ids, e) })
	p := &Page{Fields: t.Fields, Total: len(ids)}
	sortField := -1
	if o.Sort != "" {
		for i, fi := range t.Fields {
			if fi.Name == o.Sort {
				sortField = i
			}
		}
		if sortField < 0 {
			return nil, badf("%s has no field %q", t.Name, o.Sort)
		}
	}
	ix.decode.mu.Lock()
	defer ix.decode.mu.Unlock()
	var ev jfr.Event
	if sortField >= 0 || o.Search != "" {
		if len(ids) > maxScan {
			ids, p.Capped = ids[:maxScan], true
		}
		type keyed struct {
			id  int32
			num float64
			str string
		}
		var ks []keyed
		needle := strings.ToLower(o.Search)
		for _, id := range ids {
			if err := ix.decodeEvent(id, &ev); err != nil {
				return nil, err
			}
			if needle != "" && !strings.Contains(strings.ToLower(strings.Join(ix.cells(&ev), "\x00")), needle) {
				continue
			}
			k := keyed{id: id}
			if sortField >= 0 && sortField < len(ev.Fields) {
				v := ev.Fields[sortField].Resolve()
				switch v.Kind() {
				case jfr.KindFloat, jfr.KindDouble:
					k.num = v.Float()
				case jfr.KindString, jfr.KindStruct, jfr.KindArray, jfr.KindNull:
					k.str = cellText(&ev.Type.Fields[sortField], v, ev.Chunk.Clock())
				default:
					k.num = float64(v.Int())
				}
			}
			ks = append(ks, k)
		}
		if sortField >= 0 {
			slices.SortStableFunc(ks, func(a, b keyed) int {
				c := cmp.Or(cmp.Compare(a.num, b.num), strings.Compare(a.str, b.str))
				if o.Desc {
					return -c
				}
				return c
			})
		}
		ids = ids[:0]
		for _, k := range ks {
			ids = append(ids, k.id)
		}
		p.Total = len(ids)
	}
	lo := min(max(o.Offset, 0), len(ids))
	hi := min(lo+o.Limit, len(ids))
	for _, id := range ids[lo:hi] {
		if err := ix.decodeEvent(id, &ev); err != nil {
			return nil, err
		}
		p.Rows = append(p.Rows, Row{ID: id, Cells: ix.cells(&ev)})
	}
	return p, nil
}

func (ix *Index) cells(ev *jfr.Event) []string {
	out := make([]string, len(ev.Fields))
	for i := range ev.Fields {
		out[i] = cellText(&ev.Type.Fields[i], ev.Fields[i], ev.Chunk.Clock())
	}
	return out
}

// Detail is one event with all its fields and its stack.
type Detail struct {
	ID     int32       `json:"id"`
	Type   string      `json:"type"`
	File   string      `json:"file"`
	Offset int64       `json:"offset"`
	Start  int64       `json:"start"`
	Dur    int64       `json:"duration"`
	Thread string      `json:"thread"`
	Fields []FieldInfo `json:"fields"`
	Values []string    `json:"values"`
	Stack  []string    `json:"stack"` // leaf first, "func:line"
	Trunc  bool        `json:"truncated,omitempty"`
}

// Detail decodes event id.
func (ix *Index) Detail(id int32) (*Detail, error) {
	ix.decode.mu.Lock()
	defer ix.decode.mu.Unlock()
	var ev jfr.Event
	if err := ix.decodeEvent(id, &ev); err != nil {
		return nil, err
	}
	t := ix.Types[ix.typ[id]]
	d := &Detail{ID: id, Type: t.Name, File: ix.Files[ix.file[id]].Name, Offset: ix.off[id], Start: ix.t[id], Dur: ix.dur[id],
		Thread: ix.Threads[ix.thread[id]], Fields: t.Fields, Values: ix.cells(&ev), Stack: []string{}}
	s := ix.stack[id]
	for _, fr := range ix.Stacks.Frames(s) {
		f := ix.Stacks.Frame(fr)
		line := ix.Stacks.Funcs[f.Func]
		if f.Line > 0 {
			line += ":" + strconv.Itoa(int(f.Line))
		}
		d.Stack = append(d.Stack, line)
	}
	d.Trunc = ix.Stacks.Truncated(s)
	return d, nil
}
