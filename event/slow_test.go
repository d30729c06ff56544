//go:build race || purego || !amd64

package event_test

// slowGoroutines: the race detector, runtime.Stack-parsed goroutine ids
// (purego) and emulators (GOARCH=arm64 under qemu) make starting and
// naming goroutines many times dearer.
const slowGoroutines = true
