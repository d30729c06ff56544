package recorder

import (
	"strings"
	"testing"
	"time"
)

// TestStarReachesRuntimeEvents: "*" in the settings a program gives
// covers the runtime events the preset names, as it covers every type the
// program does not name; jdk.DataLoss stays on.
func TestStarReachesRuntimeEvents(t *testing.T) {
	rec, err := Start(WithRing(0, 0), WithSettings(Settings{"*": {Enabled: Bool(false)}, "jdk.CPULoad": {Enabled: Bool(true)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Stop()
	theSession.mu.Lock()
	m := theSession.merged()
	theSession.mu.Unlock()
	for _, off := range []string{"jdk.ExecutionSample", "jdk.GarbageCollection", "jdk.GCHeapSummary", "jdk.JavaThreadStatistics", "go.RuntimeMetric", "jdk.ActiveSetting"} {
		if _, on := m[off]; on {
			t.Errorf("%s is on under \"*\": disabled", off)
		}
	}
	for _, on := range []string{"jdk.CPULoad", "jdk.DataLoss"} {
		if _, ok := m[on]; !ok {
			t.Errorf("%s is off", on)
		}
	}
	// "*" sets what the preset leaves unset too, and a named type wins.
	s := Settings{"a.B": {Period: Duration(time.Second)}}.Merge(Settings{"*": {Period: Duration(time.Minute)}, "c.D": {Period: Duration(time.Hour)}})
	if got := *s["a.B"].Period; got != time.Minute {
		t.Errorf("a.B's period %v, want \"*\"'s 1m0s", got)
	}
	if got := *s["c.D"].Period; got != time.Hour {
		t.Errorf("c.D's period %v, want its own 1h0m0s", got)
	}
}

func TestStartRejectsBadOptions(t *testing.T) {
	for _, tc := range []struct {
		opts []Option
		want string
	}{
		{[]Option{WithRing(-1, 0)}, "negative maximum size"},
		{[]Option{WithRing(0, -time.Second)}, "negative maximum age"},
		{[]Option{WithRing(0, 0), WithMaxChunkSize(-5)}, "WithMaxChunkSize: -5 bytes"},
		{[]Option{WithRing(0, 0), WithMaxChunkAge(-time.Second)}, "WithMaxChunkAge: -1s"},
		{[]Option{WithRing(0, 0), WithSettings(Settings{"app.X": {Threshold: Duration(-time.Millisecond)}})}, "settings of app.X: negative threshold"},
		{[]Option{WithRing(0, 0), WithSettings(Settings{"*": {Period: Duration(-time.Millisecond)}})}, "negative period"},
	} {
		rec, err := Start(tc.opts...)
		if err == nil {
			rec.Stop()
			t.Errorf("Start accepted options wanting %q", tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start: %v, want an error containing %q", err, tc.want)
		}
	}
}

func TestParseJFCErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                          "no <configuration> element: the input is empty or not a .jfc (XML) file",
		"enabled=true\n":            `line 1, column 1: text "enabled=true" where the <configuration> element should start`,
		"{\"events\": {}}":          "not a .jfc (XML) file",
		"\n\n<settings></settings>": "line 3, column 1: root element <settings>, want <configuration>",
		"<configuration><event name=\"a\"><setting name=\"enabled\">true</event></configuration>":            "line 1",
		"<configuration><event name=\"a\"><setting name=\"enabled\">maybe</setting></event></configuration>": "a enabled",
	} {
		_, err := ParseJFC(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseJFC(%q): %v, want an error containing %q", in, err, want)
		}
	}
	s, err := ParseJFC(strings.NewReader(`<?xml version="1.0"?>
<!-- a comment -->
<configuration version="2.0"><event name="app.X"><setting name="threshold">20 ms</setting></event></configuration>`))
	if err != nil || s["app.X"].Threshold == nil || *s["app.X"].Threshold != 20*time.Millisecond {
		t.Errorf("ParseJFC of a good file: %v, %v", s, err)
	}
}
