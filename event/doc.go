// Package event defines and emits flightrec events: typed, low-overhead
// records that a running recorder (package recorder) writes as JDK Flight
// Recorder events, so `jfr` and JDK Mission Control can read them.
//
// Any library may import event: it depends on no recorder, and until a
// recorder starts every event type is disabled and costs one predictable
// branch.
//
// # Defining an event type
//
// An event type is a Go struct that embeds Timed (an event with a
// duration) or Instant as its first field, followed by its fields:
//
//	type HTTPRequest struct {
//		event.Timed
//		Path   string `jfr:"path" label:"Path"`
//		Status int32  `label:"Status Code"`
//		Bytes  int64  `label:"Response Size" content:"bytes"`
//	}
//
//	var httpRequest = event.Define[HTTPRequest](event.Info{
//		Name:     "app.HTTPRequest",
//		Label:    "HTTP Request",
//		Category: []string{"App", "HTTP"},
//	})
//
// Field types map to JFR types: bool, int8 (byte), int16 (short), int32
// (int), int64 and int (long), uint8..uint64 and uint (the same, marked
// unsigned), float32 (float), float64 (double), string
// (java.lang.String), time.Duration (long, nanoseconds), time.Time (a
// timestamp, written in ticks), Goroutine (a java.lang.Thread reference)
// and Func (a jdk.types.Method reference; FuncOf). The struct tags are: jfr
// (the field name, default the Go name with a lower case first letter; "-"
// skips the field), label, description and content, one of bytes, bits,
// ns, us, ms, s (timespans), timestamp (an int64 of ns since the Unix
// epoch, written in ticks), epochms (ms since the epoch), percentage,
// frequency, address, unsigned.
//
// Strings an event repeats (the same bytes seen again, as literals and
// long-lived values are) are written once per chunk, in the string
// constant pool, and referred to by a short key.
//
// # Emitting
//
//	var ev HTTPRequest
//	httpRequest.Begin(&ev)   // a no-op when the type is disabled
//	... the work ...
//	if ev.ShouldCommit() {   // false when disabled or below the threshold
//		ev.Path, ev.Status, ev.Bytes = p, 200, n
//	}
//	ev.Commit()
//
// startTime, duration (Timed), the event's goroutine (eventThread) and, if
// the type's stackTrace setting is on, its stack trace are recorded
// automatically.
//
// An event is at most 128 KiB, reckoned as the total length of its
// strings plus up to 10 bytes per field and 42 for its header: a larger
// one is dropped and counted as lost (jdk.DataLoss), as events are when
// the recorder's buffers are full.
//
// # Faster commits: flightrec gen
//
// For the types on a hot path, `flightrec gen` writes a Commit method per
// type that encodes its fields with code written for them, shadowing the
// embedded Instant's or Timed's:
//
//	//go:generate go run github.com/flightrec/flightrec/cmd/flightrec gen -type HTTPRequest
//
// The generated Commit writes exactly the records the generic one does
// (TestGeneratedMatchesGeneric compares them byte for byte), through
// package event/eventimpl, which is for generated code only. After a
// change to the struct's fields the generated file no longer compiles
// (it converts the struct to the one it was written for), and a change
// to a content or jfr tag that alters the encoding panics at program
// start: run go generate after changing an event struct.
//
// # Why a struct with tags, with optional generated code
//
// A plain struct is the schema: assigning a value of the wrong type to a
// field does not compile, and fields are set by ordinary assignment, the
// shape of JFR's Java API. Define reads the struct once with reflection and
// keeps each field's offset and kind; the generic Commit then encodes
// straight from the struct's memory with a switch per field, without
// reflection or interfaces, and needs no generator and no generated file
// to keep in step. A generated Commit saves that switch: on the
// three-field benchmark event it measured 24 ns per event against 26.5 ns
// generic (BenchmarkEmit/enabled, docs/perf/recorder.md). Generation is therefore an
// option for the hottest types, not a requirement. Builders
// (ev.Str("path", p)) would lose compile-time field checking and cost a
// call per field.
//
// Begin fills a variable the caller declares rather than returning the
// struct (ev := httpRequest.Begin()): the compiler builds a returned struct
// in a zeroed temporary and copies it, and on the disabled path that copy
// stalls on store-to-load forwarding, about 6 ns instead of under 1 ns.
// Commit passes the event down by pointer to code that does not retain
// it, so nothing escapes to the heap: an emitted event allocates nothing.
//
// Disabled types cost one load and branch in Begin (inlined), and the
// handle's methods check a nil type; see TestInlining.
package event
