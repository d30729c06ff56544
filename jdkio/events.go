package jdkio

import "github.com/flightrec/flightrec/event"

// The events, with the fields of the JDK 17 types of the same names in
// the same order: the recorder declares them with the JDK's layouts
// (internal/spec/jdk_io.go) and checks that these structs match them.

type socketRead struct {
	event.Timed
	Host        string
	Address     string
	Port        int32
	Timeout     int64 `content:"ms"`
	BytesRead   int64 `content:"bytes"`
	EndOfStream bool
}

type socketWrite struct {
	event.Timed
	Host         string
	Address      string
	Port         int32
	BytesWritten int64 `content:"bytes"`
}

type fileRead struct {
	event.Timed
	Path      string
	BytesRead int64 `content:"bytes"`
	EndOfFile bool
}

type fileWrite struct {
	event.Timed
	Path         string
	BytesWritten int64 `content:"bytes"`
}

type fileForce struct {
	event.Timed
	Path     string
	MetaData bool
}

// The JDK records these with stack traces, above a threshold of 20 ms in
// its default settings (the recorder's presets say the same). The types
// are held by value: the address of a variable is never nil, so the
// compiler drops Enabled's nil check and the disabled path of a wrapped
// call is one load and one branch.
var (
	socketReadType = *event.Define[socketRead](event.Info{Name: "jdk.SocketRead", Label: "Socket Read",
		Category: []string{"Java Application"}, StackTrace: true})
	socketWriteType = *event.Define[socketWrite](event.Info{Name: "jdk.SocketWrite", Label: "Socket Write",
		Category: []string{"Java Application"}, StackTrace: true})
	fileReadType = *event.Define[fileRead](event.Info{Name: "jdk.FileRead", Label: "File Read",
		Category: []string{"Java Application"}, StackTrace: true})
	fileWriteType = *event.Define[fileWrite](event.Info{Name: "jdk.FileWrite", Label: "File Write",
		Category: []string{"Java Application"}, StackTrace: true})
	fileForceType = *event.Define[fileForce](event.Info{Name: "jdk.FileForce", Label: "File Force",
		Category: []string{"Java Application"}, StackTrace: true})
)
