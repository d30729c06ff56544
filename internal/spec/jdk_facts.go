package spec

// The system facts: what the JDK writes about the JVM, the OS and the
// machine at each chunk (JVM, OS and CPU information, physical memory,
// context switches, environment variables, processes, GC configuration),
// in OpenJDK 17's layouts. The recorder fills them with Go's own data: the
// Go version, os.Args, GOGC, GOMEMLIMIT, GOMAXPROCS and GODEBUG.
var jdkFacts = []Type{
	jdkEvent("jdk.JVMInformation", "JVM Information",
		"The Go runtime: its version, the program's arguments, GOGC, GOMEMLIMIT, GOMAXPROCS and GODEBUG as flags", []string{"Java Virtual Machine"},
		fieldsOf(false, false, false,
			f("jvmName", String, "JVM Name"),
			f("jvmVersion", String, "JVM Version"),
			f("jvmArguments", String, "JVM Command Line Arguments"),
			f("jvmFlags", String, "JVM Settings File Arguments"),
			f("javaArguments", String, "Java Application Arguments"),
			contentFirst(f("jvmStartTime", Long, "JVM Start Time"), unit(Timestamp, UnitMillisecondsSinceEpoch)),
			f("pid", Long, "Process Identifier"))),
	jdkEvent("jdk.OSInformation", "OS Information", "Description of the OS the program runs on", []string{"Operating System"},
		fieldsOf(false, false, false, f("osVersion", String, "OS Version"))),
	jdkEvent("jdk.CPUInformation", "CPU Information", "", []string{"Operating System", "Processor"},
		fieldsOf(false, false, false,
			f("cpu", String, "Type"),
			f("description", String, "Description"),
			described(f("sockets", Int, "Sockets"), "", "", ""),
			described(f("cores", Int, "Cores"), "", "", ""),
			described(f("hwThreads", Int, "Hardware Threads"), "", "", ""))),
	jdkEvent("jdk.PhysicalMemory", "Physical Memory", "OS Physical Memory", []string{"Operating System", "Memory"},
		fieldsOf(false, false, false,
			described(f("totalSize", Long, "Total Size"), "Total amount of physical memory available to OS", DataAmount, UnitBytes),
			described(f("usedSize", Long, "Used Size"), "Total amount of physical memory in use", DataAmount, UnitBytes))),
	jdkEvent("jdk.ThreadContextSwitchRate", "Thread Context Switch Rate", "Context switches of the whole machine", []string{"Operating System", "Processor"},
		fieldsOf(false, false, false,
			contentFirst(f("switchRate", Float, "Switch Rate", desc("Number of context switches per second")), Annotation{Type: Frequency}))),
	jdkEvent("jdk.InitialEnvironmentVariable", "Initial Environment Variable", "", []string{"Operating System"},
		fieldsOf(false, false, false,
			f("key", String, "Key"),
			f("value", String, "Value"))),
	jdkEvent("jdk.SystemProcess", "System Process", "", []string{"Operating System"},
		fieldsOf(false, false, false,
			f("pid", String, "Process Identifier"),
			f("commandLine", String, "Command Line"))),
	jdkEvent("jdk.GCConfiguration", "GC Configuration",
		"The Go collector: concurrent mark and sweep, not generational; GOGC has no field", gcCategory("Configuration"),
		fieldsOf(false, false, false,
			cp("youngCollector", GCName, "Young Garbage Collector", desc("The garbage collector used for the young generation")),
			cp("oldCollector", GCName, "Old Garbage Collector", desc("The garbage collector used for the old generation")),
			described(f("parallelGCThreads", Int, "Parallel GC Threads"), "Number of parallel threads to use for garbage collection", "", ""),
			described(f("concurrentGCThreads", Int, "Concurrent GC Threads"), "Number of concurrent threads to use for garbage collection", "", ""),
			f("usesDynamicGCThreads", Boolean, "Uses Dynamic GC Threads", desc("Whether a dynamic number of GC threads are used or not")),
			f("isExplicitGCConcurrent", Boolean, "Concurrent Explicit GC", desc("Whether System.gc() is concurrent or not")),
			f("isExplicitGCDisabled", Boolean, "Disabled Explicit GC", desc("Whether System.gc() will cause a garbage collection or not")),
			contentFirst(f("pauseTarget", Long, "Pause Target", desc("Target for GC pauses")), unit(Timespan, UnitMilliseconds)),
			described(f("gcTimeRatio", Int, "GC Time Ratio"), "Target for runtime vs garbage collection time", "", ""))),
	jdkEvent("jdk.GCHeapConfiguration", "GC Heap Configuration",
		"The Go heap: maxSize is GOMEMLIMIT, a soft limit the collector works to stay under, not a maximum", gcCategory("Configuration"),
		fieldsOf(false, false, false,
			described(f("minSize", Long, "Minimum Heap Size"), "", DataAmount, UnitBytes),
			described(f("maxSize", Long, "Maximum Heap Size"), "", DataAmount, UnitBytes),
			described(f("initialSize", Long, "Initial Heap Size"), "", DataAmount, UnitBytes),
			f("usesCompressedOops", Boolean, "If Compressed Oops Are Used", desc("If compressed Oops (Ordinary Object Pointers) are enabled")),
			cp("compressedOopsMode", NarrowOopMode, "Compressed Oops Mode", desc("The kind of compressed oops being used")),
			described(f("objectAlignment", Long, "Object Alignment"), "Object alignment (in bytes) on the heap", DataAmount, UnitBytes),
			described(f("heapAddressBits", Byte, "Heap Address Size"), "Heap Address Size (in bits)", "", ""))),
}

func init() { JDKEvents = append(JDKEvents, jdkFacts...) }

// contentFirst puts a content-type annotation before the label, where the
// JDK declares it for fields that are not unsigned.
func contentFirst(fd Field, content Annotation) Field {
	fd.Annotations = append([]Annotation{content}, fd.Annotations...)
	return fd
}
