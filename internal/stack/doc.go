// Package stack captures the calling goroutine's stack and identity
// cheaply enough for every event: frame-pointer unwinding into a
// caller-owned fixed array (about 40 ns for 40 frames, against 1.5-2 us for
// runtime.Callers), a hash for deduplication, and the goroutine id read
// from the runtime's g at an offset found once at start-up.
//
// The unwinder follows a frame pointer only while it lies inside the
// goroutine's stack and above the last: frames reached from C (a cgo
// callback) end the walk there rather than lead it into C's registers.
//
// The fast paths need amd64 assembly; elsewhere (or with -tags purego)
// Capture uses runtime.Callers, reduced to one PC per physical frame as the
// unwinder gives, and Goid parses runtime.Stack: correct, allocation-free,
// but slow.
package stack
