// Package cgotest calls Go back from C, for the tests of the stack
// package's frame-pointer unwinder: a Go callback's frames sit on the
// goroutine's stack above frames the runtime entered from C, with whatever
// C left in the frame-pointer register. It holds only test support.
package cgotest
