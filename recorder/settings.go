package recorder

import (
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"
	"time"
)

// Setting is the configuration of one event type. Nil fields keep the
// value of the defaults (the type's definition, then the preset).
type Setting struct {
	Enabled    *bool
	Threshold  *time.Duration // timed events shorter than this are dropped
	StackTrace *bool
	Period     *time.Duration // for periodic (built-in) events
}

// Settings maps event type names to their settings. The name "*" applies
// to every type not named.
type Settings map[string]Setting

// Bool and Duration make the pointers of a Setting.
func Bool(b bool) *bool { return &b }

// Duration returns a pointer to d.
func Duration(d time.Duration) *time.Duration { return &d }

// Preset returns the settings "default" (cheap enough to leave on: no
// stack traces on custom events, no CPU samples) or "profile" (stack
// traces on custom events, CPU samples every 10 ms of a thread's CPU time,
// runtime metrics every 500 ms).
func Preset(name string) (Settings, error) {
	switch name {
	case "default":
		return Settings{
			"jdk.ExecutionSample":      {Enabled: Bool(false), Period: Duration(20 * time.Millisecond)},
			"jdk.CPULoad":              {Enabled: Bool(true), Period: Duration(time.Second)},
			"jdk.JavaThreadStatistics": {Enabled: Bool(true), Period: Duration(time.Second)},
			"go.RuntimeMetric":         {Enabled: Bool(true), Period: Duration(time.Second)},
			"jdk.GarbageCollection":    {Enabled: Bool(true)},
			"jdk.GCHeapSummary":        {Enabled: Bool(true)},
			"jdk.ActiveRecording":      {Enabled: Bool(true)},
			"jdk.ActiveSetting":        {Enabled: Bool(true)},
			"jdk.DataLoss":             {Enabled: Bool(true)},
		}, nil
	case "profile":
		s, _ := Preset("default")
		s["jdk.ExecutionSample"] = Setting{Enabled: Bool(true), Period: Duration(10 * time.Millisecond)}
		s["go.RuntimeMetric"] = Setting{Enabled: Bool(true), Period: Duration(500 * time.Millisecond)}
		s["*"] = Setting{StackTrace: Bool(true)}
		return s, nil
	}
	return nil, fmt.Errorf("recorder: unknown preset %q (want default or profile)", name)
}

// Merge returns s with the fields set in o replacing s's.
func (s Settings) Merge(o Settings) Settings {
	out := maps.Clone(s)
	if out == nil {
		out = Settings{}
	}
	for name, v := range o {
		cur := out[name]
		if v.Enabled != nil {
			cur.Enabled = v.Enabled
		}
		if v.Threshold != nil {
			cur.Threshold = v.Threshold
		}
		if v.StackTrace != nil {
			cur.StackTrace = v.StackTrace
		}
		if v.Period != nil {
			cur.Period = v.Period
		}
		out[name] = cur
	}
	return out
}

// ParseJFC reads settings from a JFR configuration (.jfc) file:
//
//	<configuration version="2.0">
//	  <event name="app.HTTPRequest">
//	    <setting name="enabled">true</setting>
//	    <setting name="threshold">10 ms</setting>
//	    <setting name="stackTrace">true</setting>
//	  </event>
//	</configuration>
//
// Durations are JFR's ("20 ms", "1 s", "0 ns") or Go's ("20ms"); period
// also accepts "everyChunk" (1 s).
func ParseJFC(r io.Reader) (Settings, error) {
	var doc struct {
		Events []struct {
			Name     string `xml:"name,attr"`
			Settings []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:",chardata"`
			} `xml:"setting"`
		} `xml:"event"`
	}
	if err := xml.NewDecoder(r).Decode(&doc); err != nil {
		return nil, fmt.Errorf("recorder: settings file: %w", err)
	}
	out := Settings{}
	for _, e := range doc.Events {
		var st Setting
		for _, kv := range e.Settings {
			v := strings.TrimSpace(kv.Value)
			switch kv.Name {
			case "enabled", "stackTrace":
				b, err := strconv.ParseBool(v)
				if err != nil {
					return nil, fmt.Errorf("recorder: settings file: %s %s: %w", e.Name, kv.Name, err)
				}
				if kv.Name == "enabled" {
					st.Enabled = &b
				} else {
					st.StackTrace = &b
				}
			case "threshold", "period":
				d, err := parseJFRDuration(v)
				if err != nil {
					return nil, fmt.Errorf("recorder: settings file: %s %s: %w", e.Name, kv.Name, err)
				}
				if kv.Name == "threshold" {
					st.Threshold = &d
				} else {
					st.Period = &d
				}
			}
		}
		out[e.Name] = st
	}
	return out, nil
}

func parseJFRDuration(s string) (time.Duration, error) {
	switch s {
	case "everyChunk", "beginChunk", "endChunk":
		return time.Second, nil
	case "0":
		return 0, nil
	}
	if d, err := time.ParseDuration(strings.ReplaceAll(s, " ", "")); err == nil {
		return d, nil
	}
	return 0, fmt.Errorf("bad duration %q", s)
}

// resolved is a fully specified setting.
type resolved struct {
	enabled, stack    bool
	threshold, period time.Duration
}

func (s Settings) resolve(name string, defEnabled, defStack bool) resolved {
	r := resolved{enabled: defEnabled, stack: defStack}
	for _, st := range []Setting{s["*"], s[name]} {
		if st.Enabled != nil {
			r.enabled = *st.Enabled
		}
		if st.StackTrace != nil {
			r.stack = *st.StackTrace
		}
		if st.Threshold != nil {
			r.threshold = *st.Threshold
		}
		if st.Period != nil {
			r.period = *st.Period
		}
	}
	return r
}
