// Package spec is the one table of built-in JDK Flight Recorder declarations
// that flightrec writes: the primitive classes, the jdk.jfr annotation types,
// the JDK 17 layouts of the constant-pool types (threads, stack traces,
// methods, classes...), the implicit fields every event starts with, and
// the JDK 17 layouts of the jdk.* events the recorder writes or declares
// (JDKEvents), with the constants of their enumerations.
//
// The writer generates each chunk's metadata from this table, and the Go
// event recorder declares its events against it, so the two cannot drift
// apart. Field order follows OpenJDK 17.0.15 exactly (docs/jfr-format.md
// §7.1, §7.2): readers such as `jfr` go by position for startTime and
// duration, and JMC recognises the types by name.
//
// Check validates a set of declarations; the package test runs it on the
// table itself.
package spec
