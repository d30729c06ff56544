// Package quantity reads numeric event fields as quantities in base units
// (nanoseconds for timespans, whatever their tick or time unit in the
// file; bytes for data amounts), which is what exports and flame graphs
// weigh stacks by.
package quantity
