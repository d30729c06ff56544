package ctlproto

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseDuration reads a duration as the JVM's options write it (30s, 10m,
// 1h, 2d) or as Go does (1m30s).
func ParseDuration(v string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(v, "d"); ok {
		const day = 24 * time.Hour
		if d, err := strconv.ParseInt(n, 10, 64); err == nil && d >= 0 && d <= math.MaxInt64/int64(day) {
			return time.Duration(d) * day, nil
		}
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad duration %q (want e.g. 30s, 10m, 1h)", v)
	}
	return d, nil
}

// ParseSize reads a size as the JVM's options write it (500k, 100m, 1g)
// or in bytes.
func ParseSize(v string) (int64, error) {
	mult := int64(1)
	switch strings.ToLower(v[max(0, len(v)-1):]) {
	case "k":
		mult = 1 << 10
	case "m":
		mult = 1 << 20
	case "g":
		mult = 1 << 30
	}
	num := v
	if mult > 1 {
		num = v[:len(v)-1]
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("bad size %q (want e.g. 100m)", v)
	}
	return n * mult, nil
}

// ParseTime reads a --begin/--end time as jcmd does: an RFC 3339 time, a
// clock time today (15:04:05, local), or a negative duration before now
// (-10m).
func ParseTime(v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if strings.HasPrefix(v, "-") {
		if d, err := ParseDuration(v[1:]); err == nil {
			return now.Add(-d), nil
		}
	}
	for _, layout := range []string{"15:04:05", "15:04"} {
		if c, err := time.ParseInLocation(layout, v, now.Location()); err == nil {
			y, m, d := now.Date()
			return time.Date(y, m, d, c.Hour(), c.Minute(), c.Second(), 0, now.Location()), nil
		}
	}
	return time.Time{}, fmt.Errorf("bad time %q (want 2026-11-24T13:00:00Z, 13:00:00 or -10m)", v)
}
