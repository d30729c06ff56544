package recorder

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
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
// to every type not named (see Merge for how it layers on a preset).
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
			// Package jdkio's events, with the thresholds of the JDK's default.jfc.
			"jdk.SocketRead":  {Threshold: Duration(20 * time.Millisecond)},
			"jdk.SocketWrite": {Threshold: Duration(20 * time.Millisecond)},
			"jdk.FileRead":    {Threshold: Duration(20 * time.Millisecond)},
			"jdk.FileWrite":   {Threshold: Duration(20 * time.Millisecond)},
			"jdk.FileForce":   {Threshold: Duration(20 * time.Millisecond)},
		}, nil
	case "profile":
		s, _ := Preset("default")
		s["jdk.ExecutionSample"] = Setting{Enabled: Bool(true), Period: Duration(10 * time.Millisecond)}
		s["go.RuntimeMetric"] = Setting{Enabled: Bool(true), Period: Duration(500 * time.Millisecond)}
		s["*"] = Setting{StackTrace: Bool(true)}
		for _, n := range []string{"jdk.SocketRead", "jdk.SocketWrite", "jdk.FileRead", "jdk.FileWrite", "jdk.FileForce"} {
			s[n] = Setting{Threshold: Duration(10 * time.Millisecond)} // the JDK's profile.jfc
		}
		// The execution tracer's types (tracer.go), with the JDK
		// profile's thresholds.
		for _, n := range tracerTypeNames {
			s[n] = Setting{Enabled: Bool(true), Threshold: Duration(tracerThresholds[n])}
		}
		return s, nil
	}
	return nil, fmt.Errorf("recorder: unknown preset %q (want default or profile)", name)
}

// Merge returns s with the fields set in o replacing s's. o's "*" is
// about every type o does not name, so its fields replace those of every
// type s names too (the runtime events of the preset "default", say),
// but jdk.DataLoss: lost events are recorded unless o names it. o's named
// types then replace that.
func (s Settings) Merge(o Settings) Settings {
	out := maps.Clone(s)
	if out == nil {
		out = Settings{}
	}
	if all, ok := o["*"]; ok {
		for name, cur := range out {
			if name != "jdk.DataLoss" {
				out[name] = cur.with(all)
			}
		}
	}
	for name, v := range o {
		out[name] = out[name].with(v)
	}
	return out
}

// with returns st with the fields set in v replacing its own.
func (st Setting) with(v Setting) Setting {
	if v.Enabled != nil {
		st.Enabled = v.Enabled
	}
	if v.Threshold != nil {
		st.Threshold = v.Threshold
	}
	if v.StackTrace != nil {
		st.StackTrace = v.StackTrace
	}
	if v.Period != nil {
		st.Period = v.Period
	}
	return st
}

// check returns an error for a negative threshold or period.
func (s Settings) check() error {
	for _, name := range slices.Sorted(maps.Keys(s)) {
		st := s[name]
		if st.Threshold != nil && *st.Threshold < 0 {
			return fmt.Errorf("recorder: settings of %s: negative threshold %v", name, *st.Threshold)
		}
		if st.Period != nil && *st.Period < 0 {
			return fmt.Errorf("recorder: settings of %s: negative period %v", name, *st.Period)
		}
	}
	return nil
}

// check returns an error for an option out of its range, which Start
// reports rather than quietly replacing.
func (c *config) check() error {
	switch {
	case c.maxSize < 0:
		return fmt.Errorf("recorder: WithRing: negative maximum size %d", c.maxSize)
	case c.maxAge < 0:
		return fmt.Errorf("recorder: WithRing: negative maximum age %v", c.maxAge)
	case c.maxChunkSize < 0:
		return fmt.Errorf("recorder: WithMaxChunkSize: %d bytes, want a positive size (or 0: the default)", c.maxChunkSize)
	case c.maxChunkAge < 0:
		return fmt.Errorf("recorder: WithMaxChunkAge: %v, want a positive age (or 0: the default)", c.maxChunkAge)
	}
	if err := checkEnvRedaction(c.envRedaction); err != nil {
		return err
	}
	return c.settings.check()
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
	dec := xml.NewDecoder(r)
	root, err := rootElement(dec)
	if err != nil {
		return nil, fmt.Errorf("recorder: settings file: %w", err)
	}
	if err := dec.DecodeElement(&doc, &root); err != nil {
		line, col := dec.InputPos()
		return nil, fmt.Errorf("recorder: settings file: line %d, column %d: %w", line, col, err)
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

// rootElement reads up to the .jfc file's root element, <configuration>,
// and returns it; or an error that says what came instead, and where.
func rootElement(dec *xml.Decoder) (xml.StartElement, error) {
	for {
		line, col := dec.InputPos()
		tok, err := dec.Token()
		if err == io.EOF {
			return xml.StartElement{}, errors.New("no <configuration> element: the input is empty or not a .jfc (XML) file")
		}
		if err != nil {
			return xml.StartElement{}, fmt.Errorf("want a .jfc (XML) file with a <configuration> element: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Local != "configuration" {
				return xml.StartElement{}, fmt.Errorf("line %d, column %d: root element <%s>, want <configuration>", line, col, t.Name.Local)
			}
			return t, nil
		case xml.CharData:
			if text := strings.TrimSpace(string(t)); text != "" {
				if len(text) > 20 {
					text = text[:20] + "..."
				}
				return xml.StartElement{}, fmt.Errorf("line %d, column %d: text %q where the <configuration> element should start: not a .jfc (XML) file", line, col, text)
			}
		}
	}
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
