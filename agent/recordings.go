package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/flightrec/flightrec/internal/ctlproto"
	"github.com/flightrec/flightrec/recorder"
)

// startSpec is a recording to start, from FLIGHTREC_START or ctl start.
type startSpec struct {
	name, settings, filename string
	duration, maxAge         time.Duration
	maxSize                  int64
	disk, dumpOnExit         bool
	options                  []string // EVENT#SETTING=VALUE
}

// defaultMaxSize bounds an in-memory recording given neither maxsize nor
// maxage.
const defaultMaxSize = 64 << 20

// managed is what the agent knows of a recording it started.
type managed struct {
	rec        *recorder.Recording
	spec       startSpec
	repository string
	timer      *time.Timer
}

// parseStartSpec reads -XX:StartFlightRecording's syntax:
// name=..,filename=..,settings=..,duration=..,maxsize=..,maxage=..,disk=..,dumponexit=..
func parseStartSpec(s string) (startSpec, error) {
	var sp startSpec
	for _, kv := range strings.Split(s, ",") {
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return sp, fmt.Errorf("option %q: want key=value", kv)
		}
		var err error
		switch k {
		case "name":
			sp.name = v
		case "filename":
			sp.filename = v
		case "settings":
			sp.settings = v
		case "duration":
			sp.duration, err = ctlproto.ParseDuration(v)
		case "maxage":
			sp.maxAge, err = ctlproto.ParseDuration(v)
		case "maxsize":
			sp.maxSize, err = ctlproto.ParseSize(v)
		case "disk":
			sp.disk, err = strconv.ParseBool(v)
		case "dumponexit":
			sp.dumpOnExit, err = strconv.ParseBool(v)
		default:
			if strings.Contains(k, "#") {
				sp.options = append(sp.options, kv)
				continue
			}
			return sp, fmt.Errorf("unknown option %q (want name, filename, settings, duration, maxsize, maxage, disk, dumponexit or EVENT#SETTING)", k)
		}
		if err != nil {
			return sp, fmt.Errorf("option %s: %w", k, err)
		}
	}
	return sp, nil
}

func startSpecOf(req *ctlproto.Request) (startSpec, error) {
	if req.Duration < 0 || req.MaxAge < 0 || req.MaxSize < 0 {
		return startSpec{}, errors.New("duration, max size and max age must not be negative")
	}
	return startSpec{name: req.Name, settings: req.Settings, filename: req.Filename, duration: req.Duration,
		maxAge: req.MaxAge, maxSize: req.MaxSize, disk: req.Disk, options: req.Options}, nil
}

// settingsOf reads the preset or .jfc file and the options of a spec.
func settingsOf(sp startSpec) (recorder.Settings, error) {
	var s recorder.Settings
	switch sp.settings {
	case "", "default", "profile":
		name := sp.settings
		if name == "" {
			name = "default"
		}
		s, _ = recorder.Preset(name)
	default:
		f, err := os.Open(sp.settings)
		if err != nil {
			return nil, fmt.Errorf("settings: %w", err)
		}
		defer f.Close()
		if s, err = recorder.ParseJFC(f); err != nil {
			return nil, err
		}
	}
	opts, err := recorder.ParseSettingSpecs(sp.options)
	if err != nil {
		return nil, err
	}
	return s.Merge(opts), nil
}

func (a *agent) start(sp startSpec) (ctlproto.RecordingInfo, error) {
	settings, err := settingsOf(sp)
	if err != nil {
		return ctlproto.RecordingInfo{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return ctlproto.RecordingInfo{}, errors.New("the agent is closing")
	}
	if sp.name == "" {
		a.nextRec++
		sp.name = "ctl-" + strconv.Itoa(a.nextRec)
	}
	if _, ok := recorder.Find(sp.name); ok {
		return ctlproto.RecordingInfo{}, fmt.Errorf("a recording named %q is already running", sp.name)
	}
	m := &managed{spec: sp}
	opts := []recorder.Option{recorder.WithName(sp.name), recorder.WithSettings(settings)}
	if sp.filename != "" && sp.maxSize == 0 && sp.maxAge == 0 && !sp.disk {
		opts = append(opts, recorder.WithFile(sp.filename))
	} else {
		size := sp.maxSize
		if size == 0 && sp.maxAge == 0 {
			size = defaultMaxSize
		}
		opts = append(opts, recorder.WithRing(size, sp.maxAge))
		if sp.disk {
			base := os.Getenv("FLIGHTREC_REPOSITORY")
			if base == "" {
				base = os.TempDir()
			}
			m.repository = filepath.Join(base, fmt.Sprintf("%s_%d_%s", time.Now().Format("2006_01_02_15_04_05"), os.Getpid(), safeName(sp.name)))
			opts = append(opts, recorder.WithRepository(m.repository))
		}
	}
	rec, err := recorder.Start(opts...)
	if err != nil {
		return ctlproto.RecordingInfo{}, err
	}
	m.rec = rec
	a.managed[rec.ID()] = m
	if sp.duration > 0 {
		m.timer = time.AfterFunc(sp.duration, func() {
			if _, err := a.stopManaged(rec, ""); err != nil {
				fmt.Fprintf(os.Stderr, "flightrec agent: stopping recording %q after %s: %v\n", sp.name, sp.duration, err)
			}
		})
	}
	return a.infoLocked(rec), nil
}

// safeName keeps a recording name usable in a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || r == 0 {
			return '_'
		}
		return r
	}, s)
}

func recordingCount() int { return len(recorder.Recordings()) }

func (a *agent) infoLocked(r *recorder.Recording) ctlproto.RecordingInfo {
	maxSize, maxAge := r.Limits()
	dest := r.Destination()
	if dest == "" {
		dest = "memory"
		if !r.InMemory() {
			dest = "stream"
		}
	}
	info := ctlproto.RecordingInfo{ID: r.ID(), Name: r.Name(), State: "running", Destination: dest, Start: r.StartTime(),
		MaxSize: maxSize, MaxAge: maxAge, Size: r.Size(), Settings: r.Settings().Specs()}
	if m := a.managed[r.ID()]; m != nil {
		info.Duration = m.spec.duration
		info.Repository = m.repository
		if m.spec.filename != "" && r.InMemory() {
			info.Destination = "memory, then " + m.spec.filename
		}
	}
	return info
}

func (a *agent) find(name string) (*recorder.Recording, error) {
	if name == "" {
		return nil, errors.New("name the recording (--name NAME or id)")
	}
	r, ok := recorder.Find(name)
	if !ok {
		var names []string
		for _, r := range recorder.Recordings() {
			names = append(names, fmt.Sprintf("%q (id %d)", r.Name(), r.ID()))
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("no recording named %q: none is running", name)
		}
		return nil, fmt.Errorf("no recording named %q; running: %s", name, strings.Join(names, ", "))
	}
	return r, nil
}

func (a *agent) check(name string) (*ctlproto.Response, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	resp := &ctlproto.Response{Process: processInfo()}
	if name != "" {
		r, err := a.find(name)
		if err != nil {
			return nil, err
		}
		resp.Recordings = append(resp.Recordings, a.infoLocked(r))
		return resp, nil
	}
	for _, r := range recorder.Recordings() {
		resp.Recordings = append(resp.Recordings, a.infoLocked(r))
	}
	return resp, nil
}

func (a *agent) configure(req *ctlproto.Request) (*ctlproto.Response, error) {
	r, err := a.find(req.Name)
	if err != nil {
		return nil, err
	}
	if len(req.Options) == 0 && req.Settings == "" {
		return nil, errors.New("nothing to configure: give EVENT#SETTING=VALUE settings")
	}
	s, err := recorder.ParseSettingSpecs(req.Options)
	if err != nil {
		return nil, err
	}
	if req.Settings != "" {
		base, err := settingsOf(startSpec{settings: req.Settings})
		if err != nil {
			return nil, err
		}
		r.SetSettings(base.Merge(s))
	} else {
		r.Configure(s)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return &ctlproto.Response{Recordings: []ctlproto.RecordingInfo{a.infoLocked(r)}}, nil
}

func (a *agent) dump(req *ctlproto.Request) (*ctlproto.Response, error) {
	r, err := a.find(req.Name)
	if err != nil {
		return nil, err
	}
	if req.Filename == "" {
		return nil, errors.New("dump needs a filename")
	}
	n, err := dumpTo(r, req.Filename, req.Begin, req.End)
	if err != nil {
		return nil, err
	}
	return &ctlproto.Response{Message: fmt.Sprintf("Dumped recording %q (id %d), %d bytes, to %s", r.Name(), r.ID(), n, req.Filename)}, nil
}

// dumpTo writes what r holds to path and returns its size.
func dumpTo(r *recorder.Recording, path string, begin, end time.Time) (int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, err
	}
	if err := r.DumpRange(f, begin, end); err != nil {
		f.Close()
		os.Remove(path)
		return 0, err
	}
	st, err := f.Stat()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func (a *agent) stop(req *ctlproto.Request) (*ctlproto.Response, error) {
	r, err := a.find(req.Name)
	if err != nil {
		return nil, err
	}
	msg, err := a.stopManaged(r, req.Filename)
	if err != nil {
		return nil, err
	}
	return &ctlproto.Response{Message: msg}, nil
}

// stopManaged stops r, first writing it to filename, or else to the file
// it was started with if it was kept in memory.
func (a *agent) stopManaged(r *recorder.Recording, filename string) (string, error) {
	a.mu.Lock()
	m := a.managed[r.ID()]
	delete(a.managed, r.ID())
	a.mu.Unlock()
	if m != nil && m.timer != nil {
		m.timer.Stop()
	}
	if filename == "" && m != nil && r.InMemory() {
		filename = m.spec.filename
	}
	msg := fmt.Sprintf("Stopped recording %q (id %d)", r.Name(), r.ID())
	var dumpErr error
	if filename != "" && filename != r.Destination() {
		var n int64
		n, dumpErr = dumpTo(r, filename, time.Time{}, time.Time{})
		if dumpErr == nil {
			msg += fmt.Sprintf(", written to %s (%d bytes)", filename, n)
		}
	}
	if err := r.Stop(); err != nil {
		return "", err
	}
	if r.Destination() != "" {
		msg += ", its file is " + r.Destination()
	}
	if m != nil && m.repository != "" {
		os.RemoveAll(m.repository)
	}
	if dumpErr != nil {
		return "", fmt.Errorf("%s, but writing %s failed: %w", msg, filename, dumpErr)
	}
	return msg, nil
}

func (a *agent) anyDumpOnExit() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, m := range a.managed {
		if m.spec.dumpOnExit {
			return true
		}
	}
	return false
}

// stopAll runs at exit: it dumps the recordings to dump on exit and stops
// those the agent started.
func (a *agent) stopAll() {
	for _, r := range recorder.Recordings() {
		a.mu.Lock()
		m := a.managed[r.ID()]
		a.mu.Unlock()
		dump := r.InMemory() && (a.opts.DumpOnExit || (m != nil && m.spec.dumpOnExit))
		if m == nil && !dump {
			continue // the program's own
		}
		name := ""
		if dump && (m == nil || m.spec.filename == "") {
			name = fmt.Sprintf("flightrec-%d-%d-%s.jfr", os.Getpid(), r.ID(), safeName(r.Name()))
		}
		if m == nil {
			if _, err := dumpTo(r, name, time.Time{}, time.Time{}); err != nil {
				fmt.Fprintf(os.Stderr, "flightrec agent: dump on exit of %q: %v\n", r.Name(), err)
			}
			continue
		}
		if !dump && r.InMemory() {
			// Kept in memory only: nothing asked for it at exit. Keep the
			// repository's chunks, if any, as after a crash.
			m.repository = ""
		}
		if _, err := a.stopManaged(r, name); err != nil {
			fmt.Fprintf(os.Stderr, "flightrec agent: at exit: %v\n", err)
		}
	}
}
