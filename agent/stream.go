package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flightrec/flightrec/internal/ctlproto"
	"github.com/flightrec/flightrec/recorder"
)

// stream sends the client the stream's flush segments (what each flush
// adds to the chunk being written: its metadata, checkpoints and the
// events of the types asked for) until it closes the connection, a write
// fails or the agent closes. The recording enables the event types that
// match the globs (every type the preset "default" enables if none are
// given) and is stopped at the end. The segments are written from the
// stream's goroutine: when the client reads too slowly the stream drops
// flushes (whole chunks, or a chunk's last flushes, so that what the
// client has of a chunk stays readable) and the client is told.
func (a *agent) stream(conn *net.UnixConn, req *ctlproto.Request) {
	a.mu.Lock()
	if a.streams >= maxStreams {
		a.mu.Unlock()
		reply(conn, &ctlproto.Response{Error: fmt.Sprintf("too many streams (at most %d at once)", maxStreams)})
		return
	}
	a.streams++
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.streams--
		a.mu.Unlock()
	}()
	// wmu orders the writes: the reply first (wmu is held until it is
	// written), then the stream goroutine's.
	var wmu sync.Mutex
	var body []byte
	broken := make(chan struct{}) // closed when a write fails
	failed := false
	write := func(kind byte, b []byte) {
		if failed {
			return
		}
		conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		if err := ctlproto.WriteFrame(conn, kind, b); err != nil {
			failed = true
			close(broken)
		}
	}
	keep := func(name string) bool { return len(req.Events) == 0 || matchAny(req.Events, name) }
	st := recorder.NewStream(recorder.WithName(fmt.Sprintf("stream-%d", time.Now().UnixNano()%1e6)), recorder.WithSettings(streamSettings(req.Events)))
	st.OnSegment(keep, func(seg *recorder.Segment) {
		wmu.Lock()
		defer wmu.Unlock()
		body = ctlproto.AppendSegmentHead(body[:0], seg.Chunk, seg.Size, seg.Header)
		for _, p := range seg.Parts {
			body = ctlproto.AppendPart(body, p.Offset, p.Data)
		}
		write(ctlproto.KindSegment, body)
		if cap(body) > 16<<20 {
			body = nil // a large flush's buffer is not kept
		}
	})
	st.OnError(func(err error) {
		wmu.Lock()
		defer wmu.Unlock()
		msg, _ := json.Marshal(&ctlproto.Response{Version: ctlproto.Version, Message: err.Error()})
		write(ctlproto.KindJSON, msg)
	})
	wmu.Lock()
	if err := st.Start(); err != nil {
		wmu.Unlock()
		reply(conn, &ctlproto.Response{Error: err.Error()})
		return
	}
	reply(conn, &ctlproto.Response{Message: fmt.Sprintf("streaming recording %q", st.Recording().Name())})
	wmu.Unlock()
	gone := make(chan struct{})
	go func() {
		// The client sends nothing more: a read returns when it goes.
		io.Copy(io.Discard, io.LimitReader(conn, 1<<10))
		close(gone)
	}()
	select {
	case <-gone:
	case <-broken:
	case <-a.quit:
	}
	// The last flush goes nowhere: a write under way fails now.
	conn.SetWriteDeadline(time.Now())
	st.Close()
}

// streamSettings turns on the event types matching the globs (by full or
// short name, as print's --events) and off the others.
func streamSettings(globs []string) recorder.Settings {
	def, _ := recorder.Preset("default")
	if len(globs) == 0 {
		return def
	}
	out := recorder.Settings{"*": {Enabled: recorder.Bool(false)}}
	for _, name := range recorder.EventTypes() {
		out[name] = recorder.Setting{Enabled: recorder.Bool(matchAny(globs, name))}
	}
	return out
}

func matchAny(globs []string, name string) bool {
	short := name[strings.LastIndexByte(name, '.')+1:]
	return slices.ContainsFunc(globs, func(g string) bool {
		ok1, _ := path.Match(g, name)
		ok2, _ := path.Match(g, short)
		return ok1 || ok2
	})
}
