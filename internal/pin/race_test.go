//go:build race

package pin

const raceEnabled = true
