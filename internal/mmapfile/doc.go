// Package mmapfile maps a file read-only into memory, so that a recording
// of any size can be read in place: the kernel pages it in on demand and
// drops it under memory pressure, and nothing is copied. Where mapping is
// not available, Open reports ErrNotSupported and callers stream instead.
//
// A mapped file that shrinks while it is read makes the next access fault;
// callers turn faults into errors by reading through Protect, in every
// goroutine that reads the mapping.
package mmapfile
