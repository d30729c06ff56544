//go:build race

package event_test

// raceEnabled: the race detector makes goroutines several times dearer.
const raceEnabled = true
