//go:build !unix

package flow

// maxRSS is not measured here.
func maxRSS() int64 { return 0 }
