//go:build !(race || purego || !amd64)

package event_test

const slowGoroutines = false
