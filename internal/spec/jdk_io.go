package spec

// The JDK 17 layouts of the socket and file I/O events, which package
// jdkio writes from its wrappers through the event API: their implicit
// fields (startTime, duration, eventThread, stackTrace) are the ones every
// timed event has, so the program's goroutine is the thread and the stack
// trace is captured as for any event; the recorder declares these types
// with the layouts here rather than from the Go structs' tags.
var jdkIOEvents = []Type{
	named(jdkEvent("jdk.SocketRead", "Socket Read",
		"Reading data from a socket, through a jdkio wrapper of a Go connection", []string{"Java Application"},
		fieldsOf(true, true, true,
			remoteHost(), remoteAddress(), remotePort(),
			f("timeout", Long, "Timeout Value", unit(Timespan, UnitMilliseconds)),
			f("bytesRead", Long, "Bytes Read", desc("Number of bytes read from the socket"), unit(DataAmount, UnitBytes)),
			f("endOfStream", Boolean, "End of Stream", desc("If end of stream was reached"))))),
	named(jdkEvent("jdk.SocketWrite", "Socket Write",
		"Writing data to a socket, through a jdkio wrapper of a Go connection", []string{"Java Application"},
		fieldsOf(true, true, true,
			remoteHost(), remoteAddress(), remotePort(),
			f("bytesWritten", Long, "Bytes Written", desc("Number of bytes written to the socket"), unit(DataAmount, UnitBytes))))),
	named(jdkEvent("jdk.FileRead", "File Read",
		"Reading data from a file, through a jdkio wrapper of an os.File", []string{"Java Application"},
		fieldsOf(true, true, true,
			filePath(),
			f("bytesRead", Long, "Bytes Read", desc("Number of bytes read from the file (possibly 0)"), unit(DataAmount, UnitBytes)),
			f("endOfFile", Boolean, "End of File", desc("If end of file was reached"))))),
	named(jdkEvent("jdk.FileWrite", "File Write",
		"Writing data to a file, through a jdkio wrapper of an os.File", []string{"Java Application"},
		fieldsOf(true, true, true,
			filePath(),
			f("bytesWritten", Long, "Bytes Written", desc("Number of bytes written to the file"), unit(DataAmount, UnitBytes))))),
	named(jdkEvent("jdk.FileForce", "File Force",
		"Force updates to be written to file (os.File.Sync, through a jdkio wrapper)", []string{"Java Application"},
		fieldsOf(true, true, true,
			filePath(),
			f("metaData", Boolean, "Update Metadata", desc("Whether the file metadata is updated"))))),
}

func init() { JDKEvents = append(JDKEvents, jdkIOEvents...) }

func remoteHost() Field    { return f("host", String, "Remote Host") }
func remoteAddress() Field { return f("address", String, "Remote Address") }
func remotePort() Field    { return f("port", Int, "Remote Port") }
func filePath() Field      { return f("path", String, "Path", desc("Full path of the file")) }
