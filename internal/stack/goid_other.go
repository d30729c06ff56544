//go:build !(amd64 || arm64) || purego

package stack

// Goid returns the calling goroutine's id.
func Goid() uint64 { return goidSlow() }

// GoidFast is false: there is no GoidAt on this platform.
const GoidFast = false

// GoidAt is Goid.
func GoidAt() uint64 { return goidSlow() }

// GoidOffset is 0: GoidFast is false.
func GoidOffset() uintptr { return 0 }
