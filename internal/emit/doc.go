// Package emit is the emit path of package event: an event's handle
// (Header), and Record and Writer, through which the generic Commit (in
// package event) and the generated ones (through package
// event/eventimpl) encode an event's record into its P's buffer (package
// batch). It is internal so that programs reach Record, which pins the
// goroutine, only through generated code.
package emit
