package event

// ForceSlowClock makes commit take the path of platforms where the
// goroutine id is fast to read but the clock-and-id call is not (arm64),
// until the returned function restores the platform's path.
func ForceSlowClock() (restore func()) {
	old := fastClock
	fastClock = false
	return func() { fastClock = old }
}
