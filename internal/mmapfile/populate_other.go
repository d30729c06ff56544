//go:build unix && !linux

package mmapfile

const populate = 0
