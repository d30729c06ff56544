package agent

import (
	"fmt"
	"io"
	"net"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/flightrec/flightrec/internal/ctlproto"
	"github.com/flightrec/flightrec/recorder"
)

// streamBacklog is how many chunks wait for a slow client before chunks
// are dropped (and the client told).
const streamBacklog = 8

// stream sends the chunks of a stream recording to the client until it
// closes the connection or the agent closes. The recording enables the
// event types that match the globs (every type the preset "default"
// enables if none are given) and is stopped at the end.
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
	chunks := make(chan []byte, streamBacklog)
	var dropped atomic.Int64
	st := recorder.NewStream(recorder.WithName(fmt.Sprintf("stream-%d", time.Now().UnixNano()%1e6)), recorder.WithSettings(streamSettings(req.Events)))
	st.OnChunk(func(b []byte) {
		select {
		case chunks <- b:
		default:
			dropped.Add(1)
		}
	})
	if err := st.Start(); err != nil {
		reply(conn, &ctlproto.Response{Error: err.Error()})
		return
	}
	defer st.Close()
	reply(conn, &ctlproto.Response{Message: fmt.Sprintf("streaming recording %q", st.Recording().Name())})
	gone := make(chan struct{})
	go func() {
		// The client sends nothing more: a read returns when it goes.
		io.Copy(io.Discard, io.LimitReader(conn, 1<<10))
		close(gone)
	}()
	var reported int64
	for {
		select {
		case b := <-chunks:
			conn.SetWriteDeadline(time.Now().Add(writeTimeout))
			if err := ctlproto.WriteFrame(conn, ctlproto.KindChunk, b); err != nil {
				return
			}
			if d := dropped.Load(); d != reported {
				reported = d
				ctlproto.WriteJSON(conn, &ctlproto.Response{Version: ctlproto.Version, Message: fmt.Sprintf("%d chunks dropped: the client reads too slowly", d)})
			}
		case <-gone:
			return
		case <-a.quit:
			return
		}
	}
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
