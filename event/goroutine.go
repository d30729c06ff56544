package event

import "sync"

// names holds what SetGoroutineName set, by goroutine id.
var names sync.Map // uint64 -> GoroutineInfo

// GoroutineInfo is what the program said about a goroutine.
type GoroutineInfo struct {
	Name   string
	Labels string // "k1=v1 k2=v2"
}

// SetGoroutineName names the calling goroutine in recordings (the
// javaName of its java.lang.Thread) and attaches labels (key, value
// pairs), written as its thread group. An empty name and no labels forget
// the goroutine; do that before a long-lived program's goroutine exits.
func SetGoroutineName(name string, labels ...string) {
	g := goid()
	if name == "" && len(labels) == 0 {
		names.Delete(g)
		return
	}
	names.Store(g, GoroutineInfo{Name: name, Labels: labelString(labels)})
}

// LookupGoroutine returns what SetGoroutineName set for goroutine g.
func LookupGoroutine(g uint64) (GoroutineInfo, bool) {
	v, ok := names.Load(g)
	if !ok {
		return GoroutineInfo{}, false
	}
	return v.(GoroutineInfo), true
}
