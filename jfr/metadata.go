package jfr

import (
	"errors"
	"fmt"
	"strconv"
)

// Metadata describes every type of one chunk: event types, constant-pool
// types, annotations and the primitives. Chunks that repeat the metadata id of
// the previous chunk share its Metadata.
type Metadata struct {
	ID            int64
	StartTicks    int64
	DurationTicks int64
	Classes       []*Class // in the order they were declared
	Region        []Attr   // attributes of the region element (locale, gmtOffset, dst)

	byID    map[int64]*Class
	byName  map[string]*Class
	idTable []*Class // byID for small ids, which is all of them in practice
}

// Class is a type declared in the metadata: an event type (SuperType
// "jdk.jfr.Event"), an annotation, a setting, a struct or a primitive.
type Class struct {
	ID          int64
	Name        string
	SuperType   string
	SimpleType  bool // encoded exactly like its only field
	Fields      []Field
	Settings    []Setting
	Annotations []Annotation

	kind      Kind // the value kind of a primitive class, KindStruct otherwise
	valueKind Kind // kind of decoded values (the field's for simple types)
	timed     bool // has a field named "duration": the JDK reads field 1 as the duration
}

// Field is one field of a class.
type Field struct {
	Name         string
	Type         *Class
	Array        bool // dimension="1"
	ConstantPool bool // encoded as a key into Type's constant pool
	Annotations  []Annotation

	op fieldOp // how the decoder reads it, derived from the above
}

// Setting is a setting element of an event type (enabled, threshold...).
type Setting struct {
	Name         string
	Type         *Class
	DefaultValue string
	Annotations  []Annotation
}

// Annotation is an annotation on a class, field or setting. Values are the
// annotation's attributes in file order ("value", or "value-0", "value-1"...
// for arrays), as text.
type Annotation struct {
	Type   *Class
	Values []Attr
}

// Attr is one name="value" attribute of the metadata element tree.
type Attr struct {
	Key, Value string
}

// Well-known names.
const (
	TypeEvent          = "jdk.jfr.Event"
	TypeAnnotation     = "java.lang.annotation.Annotation"
	TypeSettingControl = "jdk.jfr.SettingControl"
	TypeString         = "java.lang.String"
	TypeContentType    = "jdk.jfr.ContentType"
)

// Class returns the class with the given id, or nil.
func (m *Metadata) Class(id int64) *Class {
	if uint64(id) < uint64(len(m.idTable)) {
		return m.idTable[id]
	}
	return m.byID[id]
}

// ClassByName returns the class with the given name, or nil.
func (m *Metadata) ClassByName(name string) *Class { return m.byName[name] }

// EventTypes returns the classes whose supertype is jdk.jfr.Event.
func (m *Metadata) EventTypes() []*Class {
	var out []*Class
	for _, c := range m.Classes {
		if c.IsEvent() {
			out = append(out, c)
		}
	}
	return out
}

// IsEvent tells whether c is an event type.
func (c *Class) IsEvent() bool { return c.SuperType == TypeEvent }

// Kind returns the kind of values of this class: a primitive kind, or
// KindStruct.
func (c *Class) Kind() Kind { return c.kind }

// FieldIndex returns the index of the named field, or -1.
func (c *Class) FieldIndex(name string) int {
	for i := range c.Fields {
		if c.Fields[i].Name == name {
			return i
		}
	}
	return -1
}

// Annotation returns the first annotation of the named type.
func (c *Class) Annotation(name string) (Annotation, bool) {
	return findAnnotation(c.Annotations, name)
}

// Annotation returns the first annotation of the named type.
func (f *Field) Annotation(name string) (Annotation, bool) {
	return findAnnotation(f.Annotations, name)
}

// ContentType returns the field's content-type annotation: the first of its
// annotations whose class is itself annotated with jdk.jfr.ContentType
// (Timestamp, Timespan, DataAmount, Percentage...). ok is false if none.
func (f *Field) ContentType() (a Annotation, ok bool) {
	for _, a := range f.Annotations {
		if a.Type != nil && a.Type.isContentType() {
			return a, true
		}
	}
	return Annotation{}, false
}

func (c *Class) isContentType() bool {
	_, ok := c.Annotation(TypeContentType)
	return ok
}

// Label returns the value of the field's jdk.jfr.Label annotation, or "".
func (f *Field) Label() string {
	a, _ := f.Annotation("jdk.jfr.Label")
	return a.Value()
}

// Label returns the value of the class's jdk.jfr.Label annotation, or "".
func (c *Class) Label() string {
	a, _ := c.Annotation("jdk.jfr.Label")
	return a.Value()
}

// Value returns the annotation's "value" attribute, or "".
func (a Annotation) Value() string {
	for _, kv := range a.Values {
		if kv.Key == "value" {
			return kv.Value
		}
	}
	return ""
}

// Name returns the annotation type's name.
func (a Annotation) Name() string {
	if a.Type == nil {
		return ""
	}
	return a.Type.Name
}

func findAnnotation(as []Annotation, name string) (Annotation, bool) {
	for _, a := range as {
		if a.Type != nil && a.Type.Name == name {
			return a, true
		}
	}
	return Annotation{}, false
}

// primitiveKinds maps the names of JFR's primitive classes to value kinds.
var primitiveKinds = map[string]Kind{
	"boolean":  KindBool,
	"byte":     KindByte,
	"short":    KindShort,
	"char":     KindChar,
	"int":      KindInt,
	"long":     KindLong,
	"float":    KindFloat,
	"double":   KindDouble,
	TypeString: KindString,
}

// element is a node of the metadata record's element tree. Elements,
// attributes and child lists of one record share three slices.
type element struct {
	name     string
	attrs    []Attr
	children []int32 // indexes into elementTree.elems
}

type elementTree struct {
	elems []element
}

func (t *elementTree) children(e *element) []*element {
	out := make([]*element, len(e.children))
	for i, c := range e.children {
		out[i] = &t.elems[c]
	}
	return out
}

func (e *element) attr(key string) (string, bool) {
	for _, a := range e.attrs {
		if a.Key == key {
			return a.Value, true
		}
	}
	return "", false
}

// maxElementDepth bounds the nesting of the metadata element tree; the JDK
// writes at most root/metadata/class/field/annotation.
const maxElementDepth = 32

// parseMetadata decodes the payload of a metadata record (after the type id).
func parseMetadata(d *decoder) (*Metadata, error) {
	md := &Metadata{}
	md.StartTicks = int64(d.uvarint())
	md.DurationTicks = int64(d.uvarint())
	md.ID = int64(d.uvarint())
	n := d.count(1)
	if d.err != nil {
		return nil, d.err
	}
	// Decode the whole table into one buffer and make one string of it:
	// one allocation, not one per string.
	strs := make([]string, n)
	ends := make([]int, n)
	text := make([]byte, 0, d.remaining())
	for i := range strs {
		v := d.stringValue()
		if d.err != nil {
			return nil, d.err
		}
		if v.enc == encPool {
			return nil, errors.New("metadata string table refers to the constant pool")
		}
		text = v.AppendText(text)
		ends[i] = len(text)
	}
	all := string(text)
	for i, start := 0, 0; i < n; i++ {
		strs[i] = all[start:ends[i]]
		start = ends[i]
	}
	str := func(i uint64) string {
		if i >= uint64(len(strs)) {
			if d.err == nil {
				d.fail(fmt.Errorf("metadata string index %d out of range (%d strings)", i, len(strs)))
			}
			return ""
		}
		return strs[i]
	}
	// Size the shared slices for JDK metadata, whose element tree takes
	// about 12 bytes an element and 6 an attribute; they grow if a record
	// is denser. (Every element and attribute takes at least 2 bytes, which
	// bounds them by the size of the record.)
	t := &elementTree{elems: make([]element, 0, d.remaining()/10)}
	attrs := make([]Attr, 0, d.remaining()/5)
	kids := make([]int32, 0, d.remaining()/10)
	var readElement func(depth int) int32
	readElement = func(depth int) int32 {
		if depth > maxElementDepth {
			d.fail(errors.New("metadata elements nested too deeply"))
			return 0
		}
		idx := int32(len(t.elems))
		t.elems = append(t.elems, element{name: str(d.uvarint())})
		na := d.count(2)
		if d.err != nil {
			return idx
		}
		a0 := len(attrs)
		for range na {
			attrs = append(attrs, Attr{str(d.uvarint()), str(d.uvarint())})
		}
		t.elems[idx].attrs = attrs[a0:len(attrs):len(attrs)]
		nc := d.count(3)
		if d.err != nil {
			return idx
		}
		k0 := len(kids)
		for range nc {
			kids = append(kids, 0)
		}
		for i := 0; i < nc && d.err == nil; i++ {
			c := readElement(depth + 1)
			kids[k0+i] = c
		}
		t.elems[idx].children = kids[k0 : k0+nc : k0+nc]
		return idx
	}
	readElement(0)
	if d.err != nil {
		return nil, d.err
	}
	if err := md.build(t); err != nil {
		return nil, err
	}
	return md, nil
}

// build turns the element tree into classes and resolves every type id.
func (md *Metadata) build(t *elementTree) error {
	root := &t.elems[0]
	md.byID = make(map[int64]*Class)
	md.byName = make(map[string]*Class)
	var classes []*element
	foundRegion := false
	for _, e := range t.children(root) {
		switch e.name {
		case "metadata":
			for _, c := range t.children(e) {
				if c.name == "class" {
					classes = append(classes, c)
				}
			}
		case "region":
			md.Region = e.attrs
			foundRegion = true
		}
	}
	if !foundRegion {
		md.Region = nil
	}
	// Declare first: fields and annotations may refer to later classes.
	for _, e := range classes {
		c := &Class{kind: KindStruct}
		idText, _ := e.attr("id")
		id, err := strconv.ParseInt(idText, 10, 64)
		if err != nil {
			return fmt.Errorf("class with bad id %q", idText)
		}
		c.ID = id
		c.Name, _ = e.attr("name")
		c.SuperType, _ = e.attr("superType")
		_, c.SimpleType = e.attr("simpleType")
		if k, ok := primitiveKinds[c.Name]; ok {
			c.kind = k
		}
		if _, dup := md.byID[id]; dup {
			return fmt.Errorf("class id %d declared twice", id)
		}
		md.byID[id] = c
		md.byName[c.Name] = c
		md.Classes = append(md.Classes, c)
	}
	for i, e := range classes {
		c := md.Classes[i]
		for _, ch := range t.children(e) {
			switch ch.name {
			case "field":
				f, err := md.field(t, ch)
				if err != nil {
					return fmt.Errorf("class %s: %w", c.Name, err)
				}
				c.Fields = append(c.Fields, f)
			case "setting":
				s := Setting{}
				s.Name, _ = ch.attr("name")
				s.DefaultValue, _ = ch.attr("defaultValue")
				st, err := md.typeAttr(ch, "class")
				if err != nil {
					return fmt.Errorf("class %s setting %s: %w", c.Name, s.Name, err)
				}
				s.Type = st
				if s.Annotations, err = md.annotations(t, ch); err != nil {
					return err
				}
				c.Settings = append(c.Settings, s)
			case "annotation":
				a, err := md.annotation(ch)
				if err != nil {
					return fmt.Errorf("class %s: %w", c.Name, err)
				}
				c.Annotations = append(c.Annotations, a)
			}
		}
		if c.SimpleType && len(c.Fields) != 1 {
			return fmt.Errorf("simple type %s has %d fields, want 1", c.Name, len(c.Fields))
		}
	}
	return md.checkInlineCycles()
}

func (md *Metadata) typeAttr(e *element, key string) (*Class, error) {
	text, _ := e.attr(key)
	id, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("bad type id %q", text)
	}
	c := md.byID[id]
	if c == nil {
		return nil, fmt.Errorf("type %d is not defined", id)
	}
	return c, nil
}

func (md *Metadata) field(t *elementTree, e *element) (Field, error) {
	f := Field{}
	f.Name, _ = e.attr("name")
	ft, err := md.typeAttr(e, "class")
	if err != nil {
		return f, fmt.Errorf("field %s: %w", f.Name, err)
	}
	f.Type = ft
	if dim, ok := e.attr("dimension"); ok {
		switch dim {
		case "0":
		case "1":
			f.Array = true
		default:
			return f, fmt.Errorf("field %s: unsupported dimension %q", f.Name, dim)
		}
	}
	// The JDK treats the mere presence of the attribute as true.
	_, f.ConstantPool = e.attr("constantPool")
	f.Annotations, err = md.annotations(t, e)
	return f, err
}

func (md *Metadata) annotations(t *elementTree, e *element) ([]Annotation, error) {
	var out []Annotation
	for _, ci := range e.children {
		ch := &t.elems[ci]
		if ch.name != "annotation" {
			continue
		}
		if out == nil {
			out = make([]Annotation, 0, len(e.children))
		}
		a, err := md.annotation(ch)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func (md *Metadata) annotation(e *element) (Annotation, error) {
	t, err := md.typeAttr(e, "class")
	if err != nil {
		return Annotation{}, fmt.Errorf("annotation: %w", err)
	}
	// Move "class" to the front so the values share the attribute slice.
	for i, kv := range e.attrs {
		if kv.Key == "class" {
			e.attrs[0], e.attrs[i] = e.attrs[i], e.attrs[0]
			break
		}
	}
	return Annotation{Type: t, Values: e.attrs[1:]}, nil
}

// checkInlineCycles rejects classes that contain themselves through fields
// that are not constant-pool references: decoding them would never end.
func (md *Metadata) checkInlineCycles() error {
	const (
		unvisited = iota
		visiting
		done
	)
	state := make(map[*Class]int, len(md.Classes))
	var visit func(c *Class, depth int) error
	visit = func(c *Class, depth int) error {
		switch state[c] {
		case visiting:
			return fmt.Errorf("class %s contains itself inline", c.Name)
		case done:
			return nil
		}
		if depth > maxElementDepth {
			return fmt.Errorf("class %s nests structs too deeply", c.Name)
		}
		state[c] = visiting
		for _, f := range c.Fields {
			if !f.ConstantPool && f.Type.kind == KindStruct {
				if err := visit(f.Type, depth+1); err != nil {
					return err
				}
			}
		}
		state[c] = done
		c.valueKind = c.kind
		if c.SimpleType && !c.Fields[0].ConstantPool && !c.Fields[0].Array {
			c.valueKind = c.Fields[0].Type.valueKind
		}
		return nil
	}
	for _, c := range md.Classes {
		if err := visit(c, 0); err != nil {
			return err
		}
	}
	maxID := int64(-1)
	for _, c := range md.Classes {
		for i := range c.Fields {
			c.Fields[i].op = opFor(&c.Fields[i])
		}
		c.timed = c.FieldIndex("duration") >= 0
		if c.ID < maxDenseID {
			maxID = max(maxID, c.ID)
		}
	}
	md.idTable = make([]*Class, maxID+1)
	for _, c := range md.Classes {
		if c.ID >= 0 && c.ID <= maxID {
			md.idTable[c.ID] = c
		}
	}
	return nil
}

// maxDenseID bounds the id table; larger ids are looked up in the map.
const maxDenseID = 1 << 16
