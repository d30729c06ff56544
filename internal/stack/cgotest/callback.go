//go:build cgo && amd64

package cgotest

/*
#include <stdint.h>
void callGoWithFP(uintptr_t fp);
*/
import "C"

var callback func()

//export cgotestCallback
func cgotestCallback() { callback() }

// Available tells whether CallFromC works here (cgo on amd64).
const Available = true

// CallFromC calls f from a C function that has set the frame-pointer
// register to fp, which is not a frame pointer, as C compiled without
// frame pointers may leave it. Not safe for concurrent use.
func CallFromC(fp uintptr, f func()) {
	callback = f
	C.callGoWithFP(C.uintptr_t(fp))
	callback = nil
}
