package jdkio

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/flightrec/flightrec/recorder"
)

// BenchmarkConnWrite writes 64 bytes a time to a connection unwrapped, in
// a wrapper that only forwards (the cost of any net.Conn wrapper: one
// more call through an interface), and wrapped: with no recording (the types disabled), with the JDK's default
// 20 ms threshold (enabled, each write timed and dropped as short), and
// with threshold 0 (each write recorded). "nop" is a connection whose
// Write does nothing, which shows the wrapper's own cost; "tcp" a
// loopback TCP connection drained by another goroutine.
func BenchmarkConnWrite(b *testing.B) {
	buf := make([]byte, 64)
	conns := map[string]func(b *testing.B) (raw net.Conn){
		"nop": func(*testing.B) net.Conn { return nopConn{} },
		"tcp": func(b *testing.B) net.Conn {
			c, s := tcpPair(b)
			go io.Copy(io.Discard, s)
			b.Cleanup(func() { c.Close(); s.Close() })
			return c.(*Conn).NetConn()
		},
	}
	for _, kind := range []string{"nop", "tcp"} {
		for _, mode := range []string{"unwrapped", "forwarded", "disabled", "threshold20ms", "recorded"} {
			b.Run(kind+"/"+mode, func(b *testing.B) {
				c := conns[kind](b)
				switch mode {
				case "unwrapped":
				case "forwarded":
					c = forwarder{c}
				default:
					c = WrapConn(c)
				}
				if mode == "threshold20ms" || mode == "recorded" {
					th := 20 * time.Millisecond
					if mode == "recorded" {
						th = 0
					}
					rec, err := recorder.Start(recorder.WithRing(64<<20, 0), recorder.WithSettings(recorder.Settings{
						"jdk.SocketWrite": {Threshold: recorder.Duration(th), StackTrace: recorder.Bool(false)}}))
					if err != nil {
						b.Fatal(err)
					}
					defer rec.Stop()
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if _, err := c.Write(buf); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// forwarder is a net.Conn wrapper that only forwards Write.
type forwarder struct{ net.Conn }

func (f forwarder) Write(b []byte) (int, error) { return f.Conn.Write(b) }
