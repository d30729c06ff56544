package spec

// JDK event types converted from the Go execution tracer (internal/gotrace),
// with OpenJDK 17's layouts, and the relational annotations they use. They
// are kept apart from jdk.go so that each family of JDK types has its own
// file; init adds them to the shared tables.

// Relational annotations of the tracer's JDK types.
const (
	SafepointID        = "jdk.types.SafepointId"
	JavaMonitorAddress = "jdk.types.JavaMonitorAddress"
	// VMOperationType is the pool of VM operation names: a Go
	// stop-the-world's reason.
	VMOperationType = "jdk.types.VMOperationType"
)

// GCCausePeriodic is the cause of a GC cycle started by the runtime's
// forced periodic collection (runtime.forcegchelper), which HotSpot has no
// key for.
const GCCausePeriodic = 101

func init() {
	GCCauses[GCCausePeriodic] = "Periodic"
	JDKEvents = append(JDKEvents, traceEvents...)
}

func monitorAddress(lbl, description string) Field {
	return described(f("address", Long, lbl), description, MemoryAddress, "")
}

// withRelation puts a relational annotation after @Unsigned and the
// content type, where the JDK declares it.
func withRelation(fd Field, relation string) Field {
	as := append([]Annotation{}, fd.Annotations[:2]...)
	fd.Annotations = append(append(as, Annotation{Type: relation}), fd.Annotations[2:]...)
	return fd
}

func safepointID(description string) Field {
	return described(f("safepointId", Long, "Safepoint Identifier"), description, SafepointID, "")
}

// measured returns a field whose content type comes before its label, as
// the JDK declares its timespans and timestamps.
func measured(name, lbl string, content Annotation, more ...Annotation) Field {
	return Field{Name: name, Type: Long, Annotations: append([]Annotation{content, label(lbl)}, more...)}
}

var traceEvents = []Type{
	jdkEvent("jdk.JavaMonitorEnter", "Java Monitor Blocked",
		"A goroutine blocked in sync.Mutex or sync.RWMutex locking, from the Go execution tracer; address is 0: the tracer does not record which lock",
		[]string{"Java Application"},
		fieldsOf(true, true, true,
			cp("monitorClass", Class, "Monitor Class"),
			cp("previousOwner", Thread, "Previous Monitor Owner"),
			withRelation(monitorAddress("Monitor Address", ""), JavaMonitorAddress))),
	jdkEvent("jdk.JavaMonitorWait", "Java Monitor Wait",
		"A goroutine waiting in sync.Cond.Wait, from the Go execution tracer; the notifier is the goroutine that woke it",
		[]string{"Java Application"},
		fieldsOf(true, true, true,
			cp("monitorClass", Class, "Monitor Class", desc("Class of object waited on")),
			cp("notifier", Thread, "Notifier Thread", desc("Notifying Thread")),
			measured("timeout", "Timeout", unit(Timespan, UnitMilliseconds), desc("Maximum wait time")),
			f("timedOut", Boolean, "Timed Out", desc("Wait has been timed out")),
			withRelation(monitorAddress("Monitor Address", "Address of object waited on"), JavaMonitorAddress))),
	jdkEvent("jdk.ThreadPark", "Java Thread Park",
		"A goroutine blocked on a channel, select, sync.WaitGroup or semaphore, from the Go execution tracer",
		[]string{"Java Application"},
		fieldsOf(true, true, true,
			cp("parkedClass", Class, "Class Parked On"),
			measured("timeout", "Park Timeout", unit(Timespan, UnitNanoseconds)),
			measured("until", "Park Until", unit(Timestamp, UnitMillisecondsSinceEpoch)),
			withRelation(monitorAddress("Address of Object Parked", ""), JavaMonitorAddress))),
	jdkEvent("jdk.ThreadSleep", "Java Thread Sleep",
		"A goroutine in time.Sleep, from the Go execution tracer; time is the observed sleep, not the requested one",
		[]string{"Java Application"},
		fieldsOf(true, true, true,
			measured("time", "Sleep Time", unit(Timespan, UnitMilliseconds)))),
	jdkEvent("jdk.ExecuteVMOperation", "VM Operation", "A Go stop-the-world, from the Go execution tracer",
		[]string{"Java Virtual Machine", "Runtime"},
		fieldsOf(true, true, false,
			cp("operation", VMOperationType, "Operation"),
			f("safepoint", Boolean, "At Safepoint", desc("If the operation occured at a safepoint")),
			f("blocking", Boolean, "Caller Blocked", desc("If the calling thread was blocked until the operation was complete")),
			cp("caller", Thread, "Caller",
				desc("Thread requesting operation. If non-blocking, will be set to 0 indicating thread is unknown"), Annotation{Type: TransitionFrom}),
			safepointID("The safepoint (if any) under which this operation was completed"))),
	jdkEvent("jdk.SafepointBegin", "Safepoint Begin", "A Go stop-the-world, from its start to its end",
		[]string{"Java Virtual Machine", "Runtime", "Safepoint"},
		fieldsOf(true, true, false,
			safepointID(""),
			f("totalThreadCount", Int, "Total Threads", desc("The total number of threads at the start of safe point")),
			f("jniCriticalThreadCount", Int, "JNI Critical Threads", desc("The number of threads in JNI critical sections")))),
	jdkEvent("jdk.SafepointEnd", "Safepoint End", "The end of a Go stop-the-world",
		[]string{"Java Virtual Machine", "Runtime", "Safepoint"},
		fieldsOf(true, true, false, safepointID(""))),
}
