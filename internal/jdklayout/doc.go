// Package jdklayout is test support: it compares the JDK types a
// recording declares with OpenJDK 17's own (jfr/testdata/jdk17-sample),
// for the tests of every package that writes JDK event types.
package jdklayout
