package jfr

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/flightrec/flightrec/internal/leb128"
	"github.com/flightrec/flightrec/internal/spec"
)

// ContentType is a content-type annotation of a field: how `jfr` and JMC
// interpret and format its number (a timestamp, a timespan, bytes...). The
// zero value means none.
type ContentType struct {
	Annotation string // annotation class name, e.g. "jdk.jfr.Timespan"
	Unit       string // its value ("NANOSECONDS"), "" for valueless ones
}

// ContentTimestamp marks a long as a point in time: unit "TICKS" (the
// chunk's tick clock) or "MILLISECONDS_SINCE_EPOCH".
func ContentTimestamp(unit string) ContentType { return ContentType{spec.Timestamp, unit} }

// ContentTimespan marks a long as a duration: unit "TICKS", "NANOSECONDS",
// "MICROSECONDS", "MILLISECONDS" or "SECONDS".
func ContentTimespan(unit string) ContentType { return ContentType{spec.Timespan, unit} }

// ContentDataAmount marks a number as an amount of data: "BYTES" or "BITS".
func ContentDataAmount(unit string) ContentType { return ContentType{spec.DataAmount, unit} }

// ContentPercentage marks a float or double in 0..1 as a percentage.
func ContentPercentage() ContentType { return ContentType{Annotation: spec.Percentage} }

// ContentFrequency marks a number as a frequency in Hz.
func ContentFrequency() ContentType { return ContentType{Annotation: spec.Frequency} }

// ContentMemoryAddress marks a long as an address.
func ContentMemoryAddress() ContentType { return ContentType{Annotation: spec.MemoryAddress} }

// ContentUnsigned marks an integral number as unsigned.
func ContentUnsigned() ContentType { return ContentType{Annotation: spec.Unsigned} }

// FieldType describes a user field of an event or struct type.
type FieldType struct {
	Name string
	// Type is the field's class name: a primitive ("boolean", "char",
	// "float", "double", "byte", "short", "int", "long",
	// "java.lang.String"), a built-in type ("java.lang.Thread",
	// "jdk.types.StackTrace", ...) or a type added with AddType.
	Type         string
	Array        bool
	ConstantPool bool // the field holds a key into the pool of Type
	Label        string
	Description  string
	ContentType  ContentType
	// Unsigned marks an integral field as unsigned (jdk.jfr.Unsigned),
	// whatever its content type.
	Unsigned bool
}

// EventType describes an event type. Its fields are the implicit startTime,
// duration (if Timed), eventThread (if Thread) and stackTrace (if
// StackTrace), then Fields.
type EventType struct {
	Name        string
	Label       string
	Description string
	Category    []string // path from the root, e.g. {"Go", "HTTP"}
	Timed       bool
	Thread      bool
	StackTrace  bool
	Fields      []FieldType
}

// StructType describes a user-defined type, used inline in fields or as
// the type of a constant pool. A SimpleType has one field and is encoded
// exactly like it.
type StructType struct {
	Name        string
	Label       string
	Description string
	SimpleType  bool
	Fields      []FieldType
}

// MetadataBuilder assembles the metadata of a recording from type
// descriptions: the built-in declarations of internal/spec plus the event
// and struct types added to it. Types may refer to types added later.
type MetadataBuilder struct {
	types []spec.Type
	names map[string]bool
	added int // types declared beyond the built-ins
	// Region holds the attributes of the region element; nil means locale
	// "en" and gmtOffset 0 (UTC).
	Region []Attr
}

// NewMetadataBuilder returns a builder holding the built-in declarations.
func NewMetadataBuilder() *MetadataBuilder {
	b := &MetadataBuilder{names: make(map[string]bool)}
	b.types = append(b.types, spec.Types...)
	for _, t := range spec.Types {
		b.names[t.Name] = true
	}
	return b
}

// AddEvent declares an event type and returns its id.
func (b *MetadataBuilder) AddEvent(e EventType) (int64, error) {
	fields := spec.EventFields(e.Timed, e.Thread, e.StackTrace)
	for _, f := range e.Fields {
		fields = append(fields, specField(f))
	}
	return b.add(spec.Type{
		Name:        e.Name,
		SuperType:   spec.SuperEvent,
		Fields:      fields,
		Annotations: spec.ClassAnnotations(e.Label, e.Description, e.Category),
	})
}

// AddJDKEvent declares the built-in JDK event type with the given name
// (jdk.ExecutionSample, jdk.GarbageCollection, ...) with OpenJDK 17's
// layout, and returns its id.
func (b *MetadataBuilder) AddJDKEvent(name string) (int64, error) {
	t := spec.JDKEvent(name)
	if t == nil {
		return 0, fmt.Errorf("jfr: %s is not a built-in JDK event type", name)
	}
	return b.add(*t)
}

// AddType declares a struct or constant-pool type and returns its id.
func (b *MetadataBuilder) AddType(s StructType) (int64, error) {
	t := spec.Type{Name: s.Name, SimpleType: s.SimpleType, Annotations: spec.ClassAnnotations(s.Label, s.Description, nil)}
	for _, f := range s.Fields {
		t.Fields = append(t.Fields, specField(f))
	}
	return b.add(t)
}

func (b *MetadataBuilder) add(t spec.Type) (int64, error) {
	if t.Name == "" {
		return 0, errors.New("jfr: type without a name")
	}
	if b.names[t.Name] {
		return 0, fmt.Errorf("jfr: type %s declared twice", t.Name)
	}
	b.names[t.Name] = true
	t.ID = spec.UserID(b.added)
	b.added++
	b.types = append(b.types, t)
	return t.ID, nil
}

// specField declares f with its annotations in the JDK's order: @Unsigned,
// the content type, the label, the description.
func specField(f FieldType) spec.Field {
	sf := spec.Field{Name: f.Name, Type: f.Type, Array: f.Array, ConstantPool: f.ConstantPool}
	if f.Unsigned || f.ContentType.Annotation == spec.Unsigned {
		sf.Annotations = append(sf.Annotations, spec.Annotation{Type: spec.Unsigned})
	}
	if ct := f.ContentType; ct.Annotation != "" && ct.Annotation != spec.Unsigned {
		a := spec.Annotation{Type: ct.Annotation}
		if ct.Unit != "" {
			a.Values = []string{ct.Unit}
		}
		sf.Annotations = append(sf.Annotations, a)
	}
	if f.Label != "" {
		sf.Annotations = append(sf.Annotations, spec.Annotation{Type: spec.Label, Values: []string{f.Label}})
	}
	if f.Description != "" {
		sf.Annotations = append(sf.Annotations, spec.Annotation{Type: spec.Description, Values: []string{f.Description}})
	}
	return sf
}

// Build checks the declarations and returns the metadata. It encodes the
// metadata record and decodes it with the reader's parser, so the result is
// exactly what a reader of the file will see.
func (b *MetadataBuilder) Build() (*Metadata, error) {
	if err := spec.Check(b.types); err != nil {
		return nil, fmt.Errorf("jfr: metadata: %w", err)
	}
	ids := make(map[string]int64, len(b.types))
	for _, t := range b.types {
		ids[t.Name] = t.ID
	}
	anns := func(as []spec.Annotation) []*mdElement {
		var out []*mdElement
		for _, a := range as {
			var vals []Attr
			for _, kv := range a.Attrs() {
				vals = append(vals, Attr{kv[0], kv[1]})
			}
			out = append(out, annotationElement(ids[a.Type], vals))
		}
		return out
	}
	md := &mdElement{name: "metadata"}
	for _, t := range b.types {
		c := classElement(t.Name, t.SuperType, t.SimpleType, t.ID)
		c.children = anns(t.Annotations)
		for _, f := range t.Fields {
			fe := fieldElement(f.Name, ids[f.Type], f.Array, f.ConstantPool)
			fe.children = anns(f.Annotations)
			c.children = append(c.children, fe)
		}
		md.children = append(md.children, c)
	}
	return decodeMetadata(rootElement(md, b.Region))
}

// decodeMetadata encodes an element tree as a metadata record body and
// parses it back.
func decodeMetadata(root *mdElement) (*Metadata, error) {
	body := []byte{0, 0, 0} // start ticks, duration, id
	body = appendElements(body, root)
	m, err := parseMetadata(&decoder{b: body})
	if err != nil {
		return nil, fmt.Errorf("jfr: metadata: %w", err)
	}
	return m, nil
}

// mdElement is a node of the metadata record's element tree as the writer
// builds it (jfr-format.md §4.1). All attribute values are text.
type mdElement struct {
	name     string
	attrs    []Attr
	children []*mdElement
}

func classElement(name, superType string, simple bool, id int64) *mdElement {
	e := &mdElement{name: "class", attrs: []Attr{{"name", name}}}
	if superType != "" {
		e.attrs = append(e.attrs, Attr{"superType", superType})
	}
	// The JDK treats a present simpleType or constantPool attribute as
	// true whatever its value, so "false" is never written.
	if simple {
		e.attrs = append(e.attrs, Attr{"simpleType", "true"})
	}
	e.attrs = append(e.attrs, Attr{"id", strconv.FormatInt(id, 10)})
	return e
}

func fieldElement(name string, typeID int64, array, pool bool) *mdElement {
	e := &mdElement{name: "field", attrs: []Attr{{"name", name}, {"class", strconv.FormatInt(typeID, 10)}}}
	if array {
		e.attrs = append(e.attrs, Attr{"dimension", "1"})
	}
	if pool {
		e.attrs = append(e.attrs, Attr{"constantPool", "true"})
	}
	return e
}

func annotationElement(typeID int64, values []Attr) *mdElement {
	return &mdElement{name: "annotation", attrs: append([]Attr{{"class", strconv.FormatInt(typeID, 10)}}, values...)}
}

// defaultRegion is written when the metadata has none: the JDK reader fails
// without a region element (jfr-format.md §4.1).
var defaultRegion = []Attr{{"locale", "en"}, {"gmtOffset", "0"}}

func rootElement(md *mdElement, region []Attr) *mdElement {
	if len(region) == 0 {
		region = defaultRegion
	}
	return &mdElement{name: "root", children: []*mdElement{md, {name: "region", attrs: region}}}
}

// metadataElements turns a Metadata back into the element tree of its record.
func metadataElements(m *Metadata) *mdElement {
	anns := func(as []Annotation) []*mdElement {
		var out []*mdElement
		for _, a := range as {
			out = append(out, annotationElement(a.Type.ID, a.Values))
		}
		return out
	}
	md := &mdElement{name: "metadata"}
	for _, c := range m.Classes {
		ce := classElement(c.Name, c.SuperType, c.SimpleType, c.ID)
		ce.children = anns(c.Annotations)
		for _, f := range c.Fields {
			fe := fieldElement(f.Name, f.Type.ID, f.Array, f.ConstantPool)
			fe.children = anns(f.Annotations)
			ce.children = append(ce.children, fe)
		}
		for _, s := range c.Settings {
			se := &mdElement{name: "setting", attrs: []Attr{{"name", s.Name}, {"class", strconv.FormatInt(s.Type.ID, 10)}, {"defaultValue", s.DefaultValue}}}
			se.children = anns(s.Annotations)
			ce.children = append(ce.children, se)
		}
		md.children = append(md.children, ce)
	}
	return rootElement(md, m.Region)
}

// appendElements appends the string table and the element tree: the part
// of a metadata record after its id.
func appendElements(dst []byte, root *mdElement) []byte {
	index := make(map[string]uint64)
	var table []string
	intern := func(s string) {
		if _, ok := index[s]; !ok {
			index[s] = uint64(len(table))
			table = append(table, s)
		}
	}
	var collect func(e *mdElement)
	collect = func(e *mdElement) {
		intern(e.name)
		for _, a := range e.attrs {
			intern(a.Key)
			intern(a.Value)
		}
		for _, c := range e.children {
			collect(c)
		}
	}
	collect(root)
	dst = leb128.AppendUvarint(dst, uint64(len(table)))
	for _, s := range table {
		dst = AppendString(dst, s)
	}
	var write func(e *mdElement)
	write = func(e *mdElement) {
		dst = leb128.AppendUvarint(dst, index[e.name])
		dst = leb128.AppendUvarint(dst, uint64(len(e.attrs)))
		for _, a := range e.attrs {
			dst = leb128.AppendUvarint(dst, index[a.Key])
			dst = leb128.AppendUvarint(dst, index[a.Value])
		}
		dst = leb128.AppendUvarint(dst, uint64(len(e.children)))
		for _, c := range e.children {
			write(c)
		}
	}
	write(root)
	return dst
}
