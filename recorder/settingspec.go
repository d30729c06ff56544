package recorder

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ParseSettingSpecs reads settings written as jcmd's JFR options do,
// EVENT#SETTING=VALUE (app.HTTPRequest#threshold=10ms): the settings are
// enabled, threshold, stackTrace and period; durations are Go's (10ms) or
// JFR's ("10 ms"); EVENT may be * for every type.
func ParseSettingSpecs(specs []string) (Settings, error) {
	out := Settings{}
	for _, spec := range specs {
		ev, rest, ok := strings.Cut(spec, "#")
		name, val, ok2 := strings.Cut(rest, "=")
		if !ok || !ok2 || ev == "" || name == "" {
			return nil, fmt.Errorf("setting %q: want EVENT#SETTING=VALUE", spec)
		}
		st := out[ev]
		switch name {
		case "enabled", "stackTrace":
			b, err := strconv.ParseBool(val)
			if err != nil {
				return nil, fmt.Errorf("setting %q: %s takes true or false", spec, name)
			}
			if name == "enabled" {
				st.Enabled = &b
			} else {
				st.StackTrace = &b
			}
		case "threshold", "period":
			d, err := parseJFRDuration(strings.TrimSpace(val))
			if err != nil || d < 0 {
				return nil, fmt.Errorf("setting %q: %s takes a duration such as 10ms", spec, name)
			}
			if name == "threshold" {
				st.Threshold = &d
			} else {
				st.Period = &d
			}
		default:
			return nil, fmt.Errorf("setting %q: unknown setting %q (want enabled, threshold, stackTrace or period)", spec, name)
		}
		out[ev] = st
	}
	return out, nil
}

// Specs returns the settings as sorted EVENT#SETTING=VALUE strings, the
// form ParseSettingSpecs reads.
func (s Settings) Specs() []string {
	var out []string
	for ev, st := range s {
		if st.Enabled != nil {
			out = append(out, fmt.Sprintf("%s#enabled=%t", ev, *st.Enabled))
		}
		if st.Threshold != nil {
			out = append(out, fmt.Sprintf("%s#threshold=%s", ev, *st.Threshold))
		}
		if st.StackTrace != nil {
			out = append(out, fmt.Sprintf("%s#stackTrace=%t", ev, *st.StackTrace))
		}
		if st.Period != nil {
			out = append(out, fmt.Sprintf("%s#period=%s", ev, *st.Period))
		}
	}
	slices.Sort(out)
	return out
}
