package jfrtool

import (
	"cmp"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/flightrec/flightrec/jfr"
)

// MetadataOptions selects what PrintMetadata writes.
type MetadataOptions struct {
	// Events and Categories limit the output to the event types they
	// select, as for PrintOptions; other types are then left out.
	Events, Categories string
}

// PrintMetadata writes the types declared in the recording's metadata as
// `jfr metadata FILE` does: the union over all chunks (the first
// declaration of an id wins), sorted by kind and name, each as a Java-like
// class with its annotations and fields. On a format error, the types of
// the chunks read before it are written and the error is returned.
func PrintMetadata(w io.Writer, r *jfr.Reader, opts MetadataOptions) error {
	var types []*jfr.Class
	seen := map[int64]bool{}
	var err error
	var last *jfr.Metadata
	for {
		var c *jfr.Chunk
		if c, err = r.NextChunk(); err != nil {
			break
		}
		if c.Metadata == last {
			continue
		}
		last = c.Metadata
		for _, t := range c.Metadata.Classes {
			if !seen[t.ID] {
				seen[t.ID] = true
				types = append(types, t)
			}
		}
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	if opts.Events != "" || opts.Categories != "" {
		f := newFilter(opts.Events, opts.Categories)
		types = slices.DeleteFunc(types, func(t *jfr.Class) bool { return !t.IsEvent() || !f.match(t) })
	}
	slices.SortStableFunc(types, compareTypes)
	var b []byte
	for _, t := range types {
		b = appendType(b, t)
	}
	if _, werr := w.Write(b); err == nil {
		err = werr
	}
	return err
}

func typeGroup(t *jfr.Class) int {
	switch t.SuperType {
	case "":
		return 1
	case jfr.TypeAnnotation:
		return 3
	case jfr.TypeSettingControl:
		return 4
	case jfr.TypeEvent:
		return 5
	}
	return 2
}

// compareTypes orders by group, then by package (name up to its last
// dot), then by name.
func compareTypes(a, b *jfr.Class) int {
	if c := cmp.Compare(typeGroup(a), typeGroup(b)); c != 0 {
		return c
	}
	pa := a.Name[:strings.LastIndexByte(a.Name, '.')+1]
	pb := b.Name[:strings.LastIndexByte(b.Name, '.')+1]
	if pa == pb {
		return strings.Compare(a.Name, b.Name)
	}
	return strings.Compare(pa, pb)
}

// fieldTypeName is the type jfr shows for a field: a simple type (one
// field, no supertype) stands for the type of its field.
func fieldTypeName(t *jfr.Class) string {
	for range maxDepth {
		if t == nil || !isSimple(t) {
			break
		}
		t = t.Fields[0].Type
	}
	if t == nil {
		return ""
	}
	return t.Name
}

func simpleName(s string) string { return s[strings.LastIndexByte(s, '.')+1:] }

func appendType(b []byte, t *jfr.Class) []byte {
	if strings.Contains(t.Name, ".") {
		b = append(b, "@Name(\""...)
		b = append(b, t.Name...)
		b = append(b, "\")\n"...)
	}
	for _, a := range t.Annotations {
		b = appendAnnotation(b, a, "")
	}
	b = append(b, "class "...)
	b = append(b, simpleName(t.Name)...)
	if t.SuperType != "" {
		b = append(b, " extends "...)
		b = append(b, t.SuperType...)
	}
	b = append(b, " {\n"...)
	for i, f := range t.Fields {
		if i > 0 {
			b = append(b, '\n')
		}
		for _, a := range f.Annotations {
			b = appendAnnotation(b, a, "  ")
		}
		b = append(b, "  "...)
		if f.Type != nil && f.Type.SuperType == jfr.TypeSettingControl {
			b = append(b, "static "...)
		}
		if ft := fieldTypeName(f.Type); ft != "" {
			b = append(b, simpleName(ft)...)
		}
		if f.Array {
			b = append(b, "[]"...)
		}
		b = append(b, ' ')
		b = append(b, f.Name...)
		b = append(b, ";\n"...)
	}
	return append(b, "}\n\n"...)
}

// appendAnnotation writes one annotation line; jdk.jfr.Name is left out
// (the type's name is printed as @Name already).
func appendAnnotation(b []byte, a jfr.Annotation, indent string) []byte {
	if a.Type == nil || a.Type.Name == "jdk.jfr.Name" {
		return b
	}
	b = append(b, indent...)
	b = append(b, '@')
	b = append(b, simpleName(a.Type.Name)...)
	if fs := a.Type.Fields; len(fs) > 0 {
		b = append(b, '(')
		for i, f := range fs {
			if i > 0 {
				b = append(b, ", "...)
			}
			if !(len(fs) == 1 && f.Name == "value") {
				b = append(b, f.Name...)
				b = append(b, '=')
			}
			b = appendAnnotationValue(b, a, &f)
		}
		b = append(b, ')')
	}
	return append(b, '\n')
}

func appendAnnotationValue(b []byte, a jfr.Annotation, f *jfr.Field) []byte {
	quote := f.Type != nil && f.Type.Name == jfr.TypeString
	one := func(b []byte, v string, ok bool) []byte {
		if !ok {
			return append(b, "null"...)
		}
		if quote {
			b = append(b, '"')
			b = append(b, v...)
			return append(b, '"')
		}
		return append(b, v...)
	}
	if !f.Array {
		v, ok := annotationAttr(a, f.Name)
		return one(b, v, ok)
	}
	var vals []string
	prefix := f.Name + "-"
	for _, kv := range a.Values {
		if strings.HasPrefix(kv.Key, prefix) {
			vals = append(vals, kv.Value)
		}
	}
	if len(vals) == 1 {
		return one(b, vals[0], true)
	}
	b = append(b, '{')
	for i, v := range vals {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = one(b, v, true)
	}
	return append(b, '}')
}

func annotationAttr(a jfr.Annotation, name string) (string, bool) {
	for _, kv := range a.Values {
		if kv.Key == name {
			return kv.Value, true
		}
	}
	return "", false
}
