// Package jfrstack turns the stack traces of JFR events into frames named
// as profilers show them (package.Class.method for Java, the function's
// full name for Go) and interns them by content, so that stacks from
// different chunks and files, whose constant-pool keys are chunk-scoped,
// share one id when they are equal. The pprof and Perfetto exports and
// the view's flame graph all read stacks through it.
package jfrstack
