package spec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Type is a class declared in a chunk's metadata.
type Type struct {
	ID          int64
	Name        string
	SuperType   string // SuperEvent, SuperAnnotation, or "" for other types
	SimpleType  bool   // encoded exactly like its only field
	Fields      []Field
	Annotations []Annotation
}

// Field is a field of a Type. Type names the field's class.
type Field struct {
	Name         string
	Type         string
	Array        bool // dimension="1"
	ConstantPool bool // a key into the pool of Type
	Annotations  []Annotation
}

// Annotation is an annotation use. Values are the textual values: one for a
// "value" attribute, several for an array value ("value-0", "value-1"...).
type Annotation struct {
	Type   string
	Values []string
	Array  bool
}

// Attrs returns the attribute names and values the metadata record carries
// for the annotation, after its class attribute.
func (a Annotation) Attrs() [][2]string {
	var out [][2]string
	for i, v := range a.Values {
		k := "value"
		if a.Array {
			k = "value-" + strconv.Itoa(i)
		}
		out = append(out, [2]string{k, v})
	}
	return out
}

// Supertypes. They mark a class's role and are never declared themselves.
const (
	SuperEvent      = "jdk.jfr.Event"
	SuperAnnotation = "java.lang.annotation.Annotation"
)

// Primitive class names.
const (
	Boolean = "boolean"
	Char    = "char"
	Float   = "float"
	Double  = "double"
	Byte    = "byte"
	Short   = "short"
	Int     = "int"
	Long    = "long"
	String  = "java.lang.String"
)

// Annotation class names.
const (
	Label          = "jdk.jfr.Label"
	Description    = "jdk.jfr.Description"
	Category       = "jdk.jfr.Category"
	ContentType    = "jdk.jfr.ContentType"
	Name           = "jdk.jfr.Name"
	Experimental   = "jdk.jfr.Experimental"
	Timestamp      = "jdk.jfr.Timestamp"
	Timespan       = "jdk.jfr.Timespan"
	DataAmount     = "jdk.jfr.DataAmount"
	Percentage     = "jdk.jfr.Percentage"
	Frequency      = "jdk.jfr.Frequency"
	MemoryAddress  = "jdk.jfr.MemoryAddress"
	Unsigned       = "jdk.jfr.Unsigned"
	StackTraceAnno = "jdk.jfr.StackTrace"
	Enabled        = "jdk.jfr.Enabled"
	Threshold      = "jdk.jfr.Threshold"
	Period         = "jdk.jfr.Period"
	Relational     = "jdk.jfr.Relational"
	TransitionFrom = "jdk.jfr.TransitionFrom"
	TransitionTo   = "jdk.jfr.TransitionTo"
	GcID           = "jdk.types.GcId" // relational: events of one GC cycle share it
)

// Constant-pool type names.
const (
	Thread      = "java.lang.Thread"
	ThreadGroup = "jdk.types.ThreadGroup"
	Class       = "java.lang.Class"
	ClassLoader = "jdk.types.ClassLoader"
	Method      = "jdk.types.Method"
	Symbol      = "jdk.types.Symbol"
	Package     = "jdk.types.Package"
	Module      = "jdk.types.Module"
	StackTrace  = "jdk.types.StackTrace"
	StackFrame  = "jdk.types.StackFrame"
	FrameType   = "jdk.types.FrameType"
	ThreadState = "jdk.types.ThreadState"
	GCName      = "jdk.types.GCName"
	GCCause     = "jdk.types.GCCause"
	GCWhen      = "jdk.types.GCWhen"
	// VirtualSpace is a struct written inline, not a pool.
	VirtualSpace  = "jdk.types.VirtualSpace"
	NarrowOopMode = "jdk.types.NarrowOopMode"
)

// Units of the Timestamp, Timespan and DataAmount annotations.
const (
	UnitTicks                  = "TICKS"
	UnitMillisecondsSinceEpoch = "MILLISECONDS_SINCE_EPOCH"
	UnitNanoseconds            = "NANOSECONDS"
	UnitMicroseconds           = "MICROSECONDS"
	UnitMilliseconds           = "MILLISECONDS"
	UnitSeconds                = "SECONDS"
	UnitBytes                  = "BYTES"
	UnitBits                   = "BITS"
)

// ContentTags maps each name an event field's `content` struct tag takes
// to the annotation, and its unit, that declares the field's content type
// in the metadata: package event accepts these names, and the recorder
// writes them.
var ContentTags = map[string][2]string{
	"bytes":      {DataAmount, UnitBytes},
	"bits":       {DataAmount, UnitBits},
	"ns":         {Timespan, UnitNanoseconds},
	"us":         {Timespan, UnitMicroseconds},
	"ms":         {Timespan, UnitMilliseconds},
	"s":          {Timespan, UnitSeconds},
	"timestamp":  {Timestamp, UnitTicks},
	"epochms":    {Timestamp, UnitMillisecondsSinceEpoch},
	"percentage": {Percentage},
	"frequency":  {Frequency},
	"address":    {MemoryAddress},
	"unsigned":   {Unsigned},
}

// FrameType descriptions with HotSpot's pool keys; JMC maps these exact
// strings to its frame-type enum.
var FrameTypes = []string{0: "Interpreted", 1: "JIT compiled", 2: "Inlined", 3: "Native"}

// Ids of the types declared outside this table: FirstUserID up to
// BuiltinFirst-1, then from BuiltinEnd on, but MagicTypeID; the built-in
// ids lie in [BuiltinFirst, BuiltinEnd). The first 107 user types get ids
// below 128, one byte in a record's header.
const (
	FirstUserID  = 20
	BuiltinFirst = 1000
	BuiltinEnd   = 2000
	// MagicTypeID is the type of a chunk header read as a record ("FLR\0":
	// 70 bytes of type 'L'), which a writer keeping its file readable
	// leaves inside the chunk before it for a while (jfr.FillerType's
	// comment): no event type may have it.
	MagicTypeID = 'L'
)

// UserID returns the id of the n-th (from 0) type declared outside the
// table: the metadata builder and the recorder's registry number them
// alike.
func UserID(n int) int64 {
	id := FirstUserID + int64(n)
	if id >= MagicTypeID {
		id++
	}
	if id >= BuiltinFirst {
		id += BuiltinEnd - BuiltinFirst
	}
	return id
}

// SplitFunc splits a Go function name, "example.com/a/b.(*T).M", into
// the class and method names a jdk.types.Method is written with:
// "example.com/a/b" and "(*T).M". The recorder and the probe name Go
// functions alike through it.
func SplitFunc(fn string) (pkg, name string) {
	slash := strings.LastIndexByte(fn, '/') + 1
	dot := strings.IndexByte(fn[slash:], '.')
	if dot < 0 {
		return fn, fn
	}
	return fn[:slash+dot], fn[slash+dot+1:]
}

// Names of the implicit event fields.
const (
	FieldStartTime   = "startTime"
	FieldDuration    = "duration"
	FieldEventThread = "eventThread"
	FieldStackTrace  = "stackTrace"
)

func label(s string) Annotation { return Annotation{Type: Label, Values: []string{s}} }

func desc(s string) Annotation { return Annotation{Type: Description, Values: []string{s}} }

func f(name, typ, lbl string, more ...Annotation) Field {
	return Field{Name: name, Type: typ, Annotations: append([]Annotation{label(lbl)}, more...)}
}

func cp(name, typ, lbl string, more ...Annotation) Field {
	fd := f(name, typ, lbl, more...)
	fd.ConstantPool = true
	return fd
}

// labelled returns the label and description annotations of an
// annotation class, as the JDK declares them.
func labelled(lbl, description string) []Annotation {
	return []Annotation{label(lbl), desc(description)}
}

// content returns the annotations of a content-type annotation class.
// Without @ContentType `jfr print` shows values without units (1024
// instead of 1.0 kB).
func content(lbl, description string) []Annotation {
	return append([]Annotation{{Type: ContentType}}, labelled(lbl, description)...)
}

// described returns fd as the JDK declares its unsigned numbers: @Unsigned,
// the content type or relation (with its unit, if any), the label and the
// description (if any).
func described(fd Field, description, contentType, unit string) Field {
	as := []Annotation{{Type: Unsigned}}
	if contentType != "" {
		ct := Annotation{Type: contentType}
		if unit != "" {
			ct.Values = []string{unit}
		}
		as = append(as, ct)
	}
	as = append(as, fd.Annotations...)
	if description != "" {
		as = append(as, desc(description))
	}
	fd.Annotations = as
	return fd
}

func value(typ string) []Field { return []Field{{Name: "value", Type: typ}} }

// Types is the table: primitives (ids 1010–1018), annotations (1100–),
// and constant-pool types (1200–), in declaration order. They sit above
// the first user ids so that events, the most frequent records, get
// one-byte type ids (see UserID).
var Types = []Type{
	{ID: 1010, Name: Boolean},
	{ID: 1011, Name: Char},
	{ID: 1012, Name: Float},
	{ID: 1013, Name: Double},
	{ID: 1014, Name: Byte},
	{ID: 1015, Name: Short},
	{ID: 1016, Name: Int},
	{ID: 1017, Name: Long},
	{ID: 1018, Name: String},

	{ID: 1100, Name: ContentType, SuperType: SuperAnnotation, Annotations: labelled("Content Type", "Semantic meaning of a value")},
	{ID: 1101, Name: Label, SuperType: SuperAnnotation, Fields: value(String)},
	{ID: 1102, Name: Description, SuperType: SuperAnnotation, Fields: value(String)},
	{ID: 1103, Name: Category, SuperType: SuperAnnotation, Fields: []Field{{Name: "value", Type: String, Array: true}}},
	{ID: 1104, Name: Name, SuperType: SuperAnnotation, Fields: value(String)},
	{ID: 1105, Name: Experimental, SuperType: SuperAnnotation, Annotations: labelled("Experimental", "Element is not to be shown to a user by default")},
	{ID: 1106, Name: Timestamp, SuperType: SuperAnnotation, Fields: value(String), Annotations: content("Timestamp", "A point in time")},
	{ID: 1107, Name: Timespan, SuperType: SuperAnnotation, Fields: value(String), Annotations: content("Timespan", "A duration, measured in nanoseconds by default")},
	{ID: 1108, Name: DataAmount, SuperType: SuperAnnotation, Fields: value(String), Annotations: content("Data Amount", "Amount of data")},
	{ID: 1109, Name: Percentage, SuperType: SuperAnnotation, Annotations: content("Percentage", "Percentage, represented as a number between 0 and 1")},
	{ID: 1110, Name: Frequency, SuperType: SuperAnnotation, Annotations: content("Frequency", "Measure of how often something occurs, in Hertz")},
	{ID: 1111, Name: MemoryAddress, SuperType: SuperAnnotation, Annotations: content("Memory Address", "Represents a physical memory address")},
	{ID: 1112, Name: Unsigned, SuperType: SuperAnnotation, Annotations: content("Unsigned Value", "Value should be interpreted as unsigned data type")},
	{ID: 1113, Name: StackTraceAnno, SuperType: SuperAnnotation, Fields: value(Boolean)},
	{ID: 1114, Name: Enabled, SuperType: SuperAnnotation, Fields: value(Boolean)},
	{ID: 1115, Name: Threshold, SuperType: SuperAnnotation, Fields: value(String)},
	{ID: 1116, Name: Period, SuperType: SuperAnnotation, Fields: value(String)},
	{ID: 1117, Name: Relational, SuperType: SuperAnnotation, Annotations: []Annotation{label("Relation")}},
	{ID: 1118, Name: TransitionFrom, SuperType: SuperAnnotation, Annotations: []Annotation{label("Transition From")}},
	{ID: 1119, Name: TransitionTo, SuperType: SuperAnnotation, Annotations: []Annotation{label("Transition To")}},
	{ID: 1120, Name: GcID, SuperType: SuperAnnotation, Annotations: []Annotation{{Type: Relational}}},

	{ID: 1200, Name: Thread, Annotations: []Annotation{label("Thread")}, Fields: []Field{
		f("osName", String, "OS Thread Name"),
		f("osThreadId", Long, "OS Thread Id"),
		f("javaName", String, "Java Thread Name"),
		f("javaThreadId", Long, "Java Thread Id"),
		cp("group", ThreadGroup, "Java Thread Group"),
	}},
	{ID: 1201, Name: ThreadGroup, Annotations: []Annotation{label("Thread Group")}, Fields: []Field{
		cp("parent", ThreadGroup, "Parent"),
		f("name", String, "Name"),
	}},
	{ID: 1202, Name: Class, Annotations: []Annotation{label("Java Class")}, Fields: []Field{
		cp("classLoader", ClassLoader, "Class Loader"),
		cp("name", Symbol, "Name"),
		cp("package", Package, "Package"),
		f("modifiers", Int, "Access Modifiers"),
		f("hidden", Boolean, "Hidden"),
	}},
	{ID: 1203, Name: ClassLoader, Annotations: []Annotation{label("Java Class Loader")}, Fields: []Field{
		cp("type", Class, "Type"),
		cp("name", Symbol, "Name"),
	}},
	{ID: 1204, Name: Method, Annotations: []Annotation{label("Java Method")}, Fields: []Field{
		cp("type", Class, "Type"),
		cp("name", Symbol, "Name"),
		cp("descriptor", Symbol, "Descriptor"),
		f("modifiers", Int, "Access Modifiers"),
		f("hidden", Boolean, "Hidden"),
	}},
	{ID: 1205, Name: Symbol, SimpleType: true, Annotations: []Annotation{label("Symbol")}, Fields: []Field{
		f("string", String, "String"),
	}},
	{ID: 1206, Name: Package, Annotations: []Annotation{label("Package")}, Fields: []Field{
		cp("name", Symbol, "Name"),
		cp("module", Module, "Module"),
		f("exported", Boolean, "Exported"),
	}},
	{ID: 1207, Name: Module, Annotations: []Annotation{label("Module")}, Fields: []Field{
		cp("name", Symbol, "Name"),
		cp("version", Symbol, "Version"),
		cp("location", Symbol, "Location"),
		cp("classLoader", ClassLoader, "Class Loader"),
	}},
	{ID: 1208, Name: StackTrace, Annotations: []Annotation{label("Stacktrace")}, Fields: []Field{
		f("truncated", Boolean, "Truncated"),
		// Inline structs, not pool keys: that is how the JDK declares it.
		{Name: "frames", Type: StackFrame, Array: true, Annotations: []Annotation{label("Stack Frames")}},
	}},
	{ID: 1209, Name: StackFrame, Fields: []Field{
		cp("method", Method, "Java Method"),
		f("lineNumber", Int, "Line Number"),
		f("bytecodeIndex", Int, "Bytecode Index"),
		cp("type", FrameType, "Frame Type"),
	}},
	{ID: 1210, Name: FrameType, SimpleType: true, Annotations: []Annotation{label("Frame type")}, Fields: []Field{
		f("description", String, "Description"),
	}},
	{ID: 1211, Name: ThreadState, SimpleType: true, Annotations: []Annotation{label("Java Thread State")}, Fields: []Field{
		f("name", String, "Name"),
	}},
	{ID: 1212, Name: GCName, SimpleType: true, Annotations: []Annotation{label("GC Name")}, Fields: []Field{
		f("name", String, "Name"),
	}},
	{ID: 1213, Name: GCCause, SimpleType: true, Annotations: []Annotation{label("GC Cause")}, Fields: []Field{
		f("cause", String, "Cause"),
	}},
	{ID: 1214, Name: GCWhen, SimpleType: true, Annotations: []Annotation{label("GC When")}, Fields: []Field{
		f("when", String, "When"),
	}},
	{ID: 1215, Name: VirtualSpace, Fields: []Field{
		described(f("start", Long, "Start Address"), "Start address of the virtual space", MemoryAddress, ""),
		described(f("committedEnd", Long, "Committed End Address"), "End address of the committed memory for the virtual space", MemoryAddress, ""),
		described(f("committedSize", Long, "Committed Size"), "Size of the committed memory for the virtual space", DataAmount, UnitBytes),
		described(f("reservedEnd", Long, "Reserved End Address"), "End address of the reserved memory for the virtual space", MemoryAddress, ""),
		described(f("reservedSize", Long, "Reserved Size"), "Size of the reserved memory for the virtual space", DataAmount, UnitBytes),
	}},
	// Of jdk.GCHeapConfiguration (jdk_facts.go), for its layout: Go has
	// no compressed pointers, so no constant of it is written.
	{ID: 1240, Name: NarrowOopMode, SimpleType: true, Annotations: []Annotation{label("Narrow Oop Mode")}, Fields: []Field{
		f("mode", String, "Mode"),
	}},
	// Of the execution tracer's events (jdk_trace.go).
	{ID: 1140, Name: SafepointID, SuperType: SuperAnnotation, Annotations: []Annotation{{Type: Relational}}},
	{ID: 1141, Name: JavaMonitorAddress, SuperType: SuperAnnotation, Annotations: []Annotation{{Type: Relational}}},
	{ID: 1241, Name: VMOperationType, SimpleType: true, Annotations: []Annotation{label("VM Operation Type")}, Fields: []Field{f("type", String, "Type")}},
}

// EventFields returns the implicit fields of an event type in the JDK's
// order: startTime, then duration if timed (the JDK reads the second field
// as the duration whenever a field is called "duration"), then eventThread
// and stackTrace if wanted.
func EventFields(timed, thread, stackTrace bool) []Field {
	fs := []Field{f(FieldStartTime, Long, "Start Time", Annotation{Type: Timestamp, Values: []string{UnitTicks}})}
	if timed {
		fs = append(fs, f(FieldDuration, Long, "Duration", Annotation{Type: Timespan, Values: []string{UnitTicks}}))
	}
	if thread {
		fs = append(fs, cp(FieldEventThread, Thread, "Event Thread", desc("Thread in which event was committed in")))
	}
	if stackTrace {
		fs = append(fs, cp(FieldStackTrace, StackTrace, "Stack Trace", desc("Stack Trace starting from the method the event was committed in")))
	}
	return fs
}

// ClassAnnotations returns the annotations of an event or struct type: label,
// description and category path, each only if given.
func ClassAnnotations(lbl, description string, category []string) []Annotation {
	var as []Annotation
	if lbl != "" {
		as = append(as, label(lbl))
	}
	if description != "" {
		as = append(as, desc(description))
	}
	if len(category) > 0 {
		as = append(as, Annotation{Type: Category, Values: category, Array: true})
	}
	return as
}

var byName = func() map[string]*Type {
	m := make(map[string]*Type, len(Types))
	for i := range Types {
		m[Types[i].Name] = &Types[i]
	}
	return m
}()

// Lookup returns the built-in type with the given name, or nil.
func Lookup(name string) *Type { return byName[name] }

// IsPrimitive tells whether name is one of the nine primitive classes
// (java.lang.String included).
func IsPrimitive(name string) bool {
	t := byName[name]
	return t != nil && t.ID >= BuiltinFirst+10 && t.ID <= BuiltinFirst+18
}

// Check validates a set of declarations as a JFR reader would: unique ids
// (never 0 or 1, the metadata and checkpoint record types) and names, every
// field and annotation type declared, constant-pool fields naming non-
// primitive types, simple types with one field, annotations only of
// annotation types, and events starting with startTime and, if they have a
// duration, duration second.
func Check(types []Type) error {
	ids := make(map[int64]string, len(types))
	names := make(map[string]*Type, len(types))
	var errs []error
	for i := range types {
		t := &types[i]
		if t.ID == 0 || t.ID == 1 {
			errs = append(errs, fmt.Errorf("%s: id %d is reserved for metadata/checkpoint records", t.Name, t.ID))
		}
		if prev, dup := ids[t.ID]; dup {
			errs = append(errs, fmt.Errorf("%s: id %d already used by %s", t.Name, t.ID, prev))
		}
		if _, dup := names[t.Name]; dup || t.Name == "" {
			errs = append(errs, fmt.Errorf("type name %q declared twice or empty", t.Name))
		}
		ids[t.ID] = t.Name
		names[t.Name] = t
	}
	checkAnnotations := func(where string, as []Annotation) {
		for _, a := range as {
			at := names[a.Type]
			switch {
			case at == nil:
				errs = append(errs, fmt.Errorf("%s: annotation type %s is not declared", where, a.Type))
			case at.SuperType != SuperAnnotation:
				errs = append(errs, fmt.Errorf("%s: %s is not an annotation type", where, a.Type))
			}
		}
	}
	for i := range types {
		t := &types[i]
		checkAnnotations(t.Name, t.Annotations)
		if t.SimpleType && len(t.Fields) != 1 {
			errs = append(errs, fmt.Errorf("%s: simple type with %d fields", t.Name, len(t.Fields)))
		}
		seen := make(map[string]bool, len(t.Fields))
		for _, fd := range t.Fields {
			where := t.Name + "." + fd.Name
			if seen[fd.Name] {
				errs = append(errs, fmt.Errorf("%s: field declared twice", where))
			}
			seen[fd.Name] = true
			ft := names[fd.Type]
			switch {
			case ft == nil:
				errs = append(errs, fmt.Errorf("%s: type %s is not declared", where, fd.Type))
			case fd.ConstantPool && (IsPrimitive(fd.Type) && fd.Type != String || ft.SuperType != ""):
				errs = append(errs, fmt.Errorf("%s: constant-pool field of type %s, which has no pool", where, fd.Type))
			case ft.SuperType == SuperEvent || ft.SuperType == SuperAnnotation:
				errs = append(errs, fmt.Errorf("%s: field of %s type %s", where, ft.SuperType, fd.Type))
			}
			checkAnnotations(where, fd.Annotations)
		}
		if t.SuperType == SuperEvent {
			errs = append(errs, checkEvent(t))
		}
	}
	return errors.Join(errs...)
}

func checkEvent(t *Type) error {
	if len(t.Fields) == 0 || t.Fields[0].Name != FieldStartTime || t.Fields[0].Type != Long {
		return fmt.Errorf("event %s: first field must be startTime long", t.Name)
	}
	for i, fd := range t.Fields {
		if fd.Name == FieldDuration && (i != 1 || fd.Type != Long) {
			return fmt.Errorf("event %s: duration must be the second field, a long", t.Name)
		}
	}
	return nil
}
