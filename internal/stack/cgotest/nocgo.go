//go:build !cgo || !amd64

package cgotest

// Available tells whether CallFromC works here: it needs cgo on amd64.
const Available = false

// CallFromC calls f: without cgo there is no C to call it from.
func CallFromC(fp uintptr, f func()) { f() }
