package spec

// JDK event types that flightrec writes or declares, with the OpenJDK 17
// layouts: the same fields in the same order with the same annotations
// (recorder's TestJDK17Layouts compares them with a JDK 17 recording).
// Readers that go by position (async-profiler's converter reads
// jdk.ExecutionSample as startTime, sampledThread, stackTrace, state) or
// join on names and annotations (`jfr view`, JMC's rules) read them as the
// JDK's. Only the class descriptions say what the Go version records, and
// fields only Go has come after all of the JDK's.
//
// Their ids are assigned where they are declared (UserID), like those of
// the program's own events.
var JDKEvents = []Type{
	jdkEvent("jdk.ExecutionSample", "Method Profiling Sample",
		"Snapshot of a running goroutine's stack, from the Go CPU profiler", []string{"Java Virtual Machine", "Profiling"},
		fieldsOf(false, false, false,
			cp("sampledThread", Thread, "Thread"),
			cp(FieldStackTrace, StackTrace, "Stack Trace"),
			cp("state", ThreadState, "Thread State"))),
	jdkEvent("jdk.DataLoss", "Data Loss", "Data could not be recorded: no free buffer, or the event was too large",
		[]string{"Flight Recorder"},
		fieldsOf(false, false, false,
			described(f("amount", Long, "Amount"), "Amount lost data", DataAmount, UnitBytes),
			described(f("total", Long, "Total"), "Total lost amount for thread", DataAmount, UnitBytes),
			// Go only: the JDK counts bytes alone.
			described(f("droppedEvents", Long, "Dropped Events"), "Events lost since the previous jdk.DataLoss", "", ""))),
	named(jdkEvent("jdk.ActiveRecording", "Flight Recording", "", []string{"Flight Recorder"},
		fieldsOf(true, true, true,
			f("id", Long, "Id"),
			f("name", String, "Name"),
			f("destination", String, "Destination"),
			f("maxAge", Long, "Max Age", unit(Timespan, UnitMilliseconds)),
			f("flushInterval", Long, "Flush Interval", unit(Timespan, UnitMilliseconds)),
			f("maxSize", Long, "Max Size", unit(DataAmount, UnitBytes)),
			f("recordingStart", Long, "Start Time", unit(Timestamp, UnitMillisecondsSinceEpoch)),
			f("recordingDuration", Long, "Recording Duration", unit(Timespan, UnitMilliseconds))))),
	named(jdkEvent("jdk.ActiveSetting", "Recording Setting", "", []string{"Flight Recorder"},
		fieldsOf(true, true, true,
			f("id", Long, "Event Id"),
			f("name", String, "Setting Name"),
			f("value", String, "Setting Value")))),
	jdkEvent("jdk.GarbageCollection", "Garbage Collection",
		"A Go GC cycle: duration and pauses are its stop-the-world pauses", gcCategory("Collector"),
		fieldsOf(true, false, false,
			gcID(),
			cp("name", GCName, "Name", desc("The name of the Garbage Collector")),
			cp("cause", GCCause, "Cause", desc("The reason for triggering this Garbage Collection")),
			described(f("sumOfPauses", Long, "Sum of Pauses"), "Sum of all the times in which Java execution was paused during the garbage collection", Timespan, UnitTicks),
			described(f("longestPause", Long, "Longest Pause"), "Longest individual pause during the garbage collection", Timespan, UnitTicks))),
	jdkEvent("jdk.OldGarbageCollection", "Old Garbage Collection", "Extra information specific to Old Garbage Collections",
		gcCategory("Collector"), fieldsOf(true, false, false, gcID())),
	jdkEvent("jdk.YoungGarbageCollection", "Young Garbage Collection", "Extra information specific to Young Garbage Collections",
		gcCategory("Collector"), fieldsOf(true, false, false, gcID(),
			described(f("tenuringThreshold", Int, "Tenuring Threshold"), "", "", ""))),
	jdkEvent("jdk.GCPhasePause", "GC Phase Pause", "", gcCategory("Phases"),
		fieldsOf(true, true, false, gcID(), f("name", String, "Name"))),
	jdkEvent("jdk.GCHeapSummary", "Heap Summary", "", gcCategory("Heap"),
		fieldsOf(false, false, false,
			gcID(),
			cp("when", GCWhen, "When"),
			f("heapSpace", VirtualSpace, "Heap Space"),
			described(f("heapUsed", Long, "Heap Used"), "Bytes allocated by objects in the heap", DataAmount, UnitBytes))),
	jdkEvent("jdk.CPULoad", "CPU Load", "Recent CPU use of the process and of the machine", []string{"Operating System", "Processor"},
		fieldsOf(false, false, false,
			percentage("jvmUser", "JVM User"),
			percentage("jvmSystem", "JVM System"),
			percentage("machineTotal", "Machine Total"))),
	jdkEvent("jdk.JavaThreadStatistics", "Java Thread Statistics", "", []string{"Java Application", "Statistics"},
		fieldsOf(false, false, false,
			f("activeCount", Long, "Active Threads", desc("Number of live active threads including both daemon and non-daemon threads")),
			f("daemonCount", Long, "Daemon Threads", desc("Number of live daemon threads")),
			f("accumulatedCount", Long, "Accumulated Threads", desc("Number of threads created and also started since JVM start")),
			f("peakCount", Long, "Peak Threads", desc("Peak live thread count since JVM start or when peak count was reset")))),
	jdkEvent("jdk.Shutdown", "JVM Shutdown", "JVM shutting down", []string{"Java Virtual Machine", "Runtime"},
		fieldsOf(false, true, true, f("reason", String, "Reason", desc("Reason for JVM shutdown")))),
}

// JDKEvent returns the JDK event type with the given name, or nil.
func JDKEvent(name string) *Type {
	for i := range JDKEvents {
		if JDKEvents[i].Name == name {
			return &JDKEvents[i]
		}
	}
	return nil
}

func jdkEvent(name, lbl, description string, category []string, fields []Field) Type {
	return Type{Name: name, SuperType: SuperEvent, Fields: fields, Annotations: ClassAnnotations(lbl, description, category)}
}

// named adds the @Name annotation the JDK gives its events written from
// Java rather than from the JVM.
func named(t Type) Type {
	t.Annotations = append([]Annotation{{Type: Name, Values: []string{t.Name}}}, t.Annotations...)
	return t
}

func fieldsOf(timed, thread, stackTrace bool, fields ...Field) []Field {
	return append(EventFields(timed, thread, stackTrace), fields...)
}

func gcCategory(leaf string) []string { return []string{"Java Virtual Machine", "GC", leaf} }

func gcID() Field {
	fd := described(f("gcId", Int, "GC Identifier"), "", GcID, "")
	return fd
}

func unit(annotation, u string) Annotation { return Annotation{Type: annotation, Values: []string{u}} }

func percentage(name, lbl string) Field {
	fd := f(name, Float, lbl)
	fd.Annotations = append([]Annotation{{Type: Percentage}}, fd.Annotations...)
	return fd
}

// Pool constants of the enumerations, under the keys HotSpot 17 gives
// them; the ones only Go has take keys HotSpot does not use.
var (
	// ThreadStates are the JVMTI thread states. async-profiler's converter
	// and JMC look samples' states up by these names.
	ThreadStates = map[uint64]string{
		0:    "STATE_NEW",
		2:    "STATE_TERMINATED",
		5:    "STATE_RUNNABLE",
		225:  "STATE_SLEEPING",
		401:  "STATE_IN_OBJECT_WAIT",
		417:  "STATE_IN_OBJECT_WAIT_TIMED",
		657:  "STATE_PARKED",
		673:  "STATE_PARKED_TIMED",
		1025: "STATE_BLOCKED_ON_MONITOR_ENTER",
	}
	GCWhens  = map[uint64]string{0: "Before GC", 1: "After GC"}
	GCNames  = map[uint64]string{12: "N/A", 100: "Go"}
	GCCauses = map[uint64]string{0: "System.gc()", 100: "Heap Goal"}
)

// Keys of the enumeration constants flightrec writes.
const (
	StateRunnable     = 5
	GCBefore          = 0
	GCAfter           = 1
	GCNameGo          = 100
	GCNameNone        = 12 // HotSpot's NA: a generation the collector does not have
	GCCauseSystemGC   = 0
	GCCauseHeapTarget = 100
)
