package jdkio

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"
)

// Conn is a net.Conn whose reads and writes are recorded as jdk.SocketRead
// and jdk.SocketWrite events, with the peer's address and port, the
// host name it was dialed by (if any) and the byte counts. WrapConn,
// WrapListener, DialContext and Transport make them.
type Conn struct {
	net.Conn
	host, address string
	port          int32
	readDeadline  atomic.Int64 // Unix ns; 0: none
}

// WrapConn returns c recording its reads and writes, or c itself if its
// remote address is not an IP address and port (a Unix socket, a
// net.Pipe), as an event that cannot say its peer misleads, or if c is a
// Conn already. The host is unknown ("", as the JDK's for an address it
// was not given a name for); DialContext's connections carry the name
// they were dialed by.
func WrapConn(c net.Conn) net.Conn { return wrapConn(c, "") }

func wrapConn(c net.Conn, host string) net.Conn {
	if _, ok := c.(*Conn); ok {
		return c
	}
	peer, ok := peerOf(c.RemoteAddr())
	if !ok {
		return c
	}
	return &Conn{Conn: c, host: host, address: peer.Addr().String(), port: int32(peer.Port())}
}

// peerOf returns the IP address and port of a connection's remote address.
func peerOf(a net.Addr) (netip.AddrPort, bool) {
	var ap netip.AddrPort
	switch a := a.(type) {
	case nil:
		return ap, false
	case *net.TCPAddr:
		ap = a.AddrPort()
	case *net.UDPAddr:
		ap = a.AddrPort()
	default:
		var err error
		if ap, err = netip.ParseAddrPort(a.String()); err != nil {
			return ap, false
		}
	}
	ap = netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())
	return ap, ap.Addr().IsValid()
}

// Read reads from the connection, recording a jdk.SocketRead event if
// the type is enabled and the read lasts at least its threshold.
func (c *Conn) Read(b []byte) (int, error) {
	if !socketReadType.Enabled() {
		return c.Conn.Read(b)
	}
	return c.readRecorded(b)
}

func (c *Conn) readRecorded(b []byte) (int, error) {
	var ev socketRead
	socketReadType.Begin(&ev)
	timeout := c.timeout()
	n, err := c.Conn.Read(b)
	if ev.ShouldCommit() {
		ev.Host, ev.Address, ev.Port = c.host, c.address, c.port
		ev.Timeout, ev.BytesRead, ev.EndOfStream = timeout, int64(n), err == io.EOF
		ev.Commit()
	}
	return n, err
}

// timeout returns the time left before the read deadline, in milliseconds
// rounded up, as the JDK's SO_TIMEOUT: 0 when there is none, and at least
// 1 when the deadline has passed (the read fails at once).
func (c *Conn) timeout() int64 {
	d := c.readDeadline.Load()
	if d == 0 {
		return 0
	}
	left := d - time.Now().UnixNano()
	return max((left+int64(time.Millisecond)-1)/int64(time.Millisecond), 1)
}

// Write writes to the connection, recording a jdk.SocketWrite event if
// the type is enabled and the write lasts at least its threshold.
func (c *Conn) Write(b []byte) (int, error) {
	if !socketWriteType.Enabled() {
		return c.Conn.Write(b)
	}
	return c.writeRecorded(b)
}

func (c *Conn) writeRecorded(b []byte) (int, error) {
	var ev socketWrite
	socketWriteType.Begin(&ev)
	n, err := c.Conn.Write(b)
	if ev.ShouldCommit() {
		ev.Host, ev.Address, ev.Port = c.host, c.address, c.port
		ev.BytesWritten = int64(n)
		ev.Commit()
	}
	return n, err
}

// SetDeadline sets the connection's deadlines; the read deadline is the
// jdk.SocketRead events' timeout.
func (c *Conn) SetDeadline(t time.Time) error {
	err := c.Conn.SetDeadline(t)
	if err == nil {
		c.readDeadline.Store(unixNanos(t))
	}
	return err
}

// SetReadDeadline sets the connection's read deadline, the
// jdk.SocketRead events' timeout.
func (c *Conn) SetReadDeadline(t time.Time) error {
	err := c.Conn.SetReadDeadline(t)
	if err == nil {
		c.readDeadline.Store(unixNanos(t))
	}
	return err
}

func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// CloseWrite shuts down the writing side of a TCP connection (net/http's
// server does before closing); other connections return
// errors.ErrUnsupported.
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// NetConn returns the wrapped connection.
func (c *Conn) NetConn() net.Conn { return c.Conn }

type listener struct{ net.Listener }

// WrapListener returns l, whose accepted connections are wrapped
// (WrapConn).
func WrapListener(l net.Listener) net.Listener { return listener{l} }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	return wrapConn(c, ""), nil
}

// A DialFunc makes connections, as net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// DialContext returns dial, whose connections are wrapped (WrapConn); their
// host is the name in the address dialed, or "" if that is an IP address,
// as the JDK's.
func DialContext(dial DialFunc) DialFunc {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := dial(ctx, network, address)
		if err != nil {
			return c, err
		}
		return wrapConn(c, hostName(address)), nil
	}
}

// hostName returns the host of a dialed address, or "" if it is an IP
// address.
func hostName(address string) string {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return ""
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return ""
	}
	return host
}

// Transport returns a copy of t (of http.DefaultTransport if t is nil)
// whose connections are wrapped, through its DialContext: the events
// count the bytes on the socket, which for HTTPS are TLS records and for
// HTTP/2 the frames of every stream sharing the connection, and the peer
// is the proxy when there is one. A DialTLSContext set on t makes the TLS
// connections itself, whose reads and writes are the plaintext: those
// are not recorded.
func Transport(t *http.Transport) *http.Transport {
	if t == nil {
		if dt, ok := http.DefaultTransport.(*http.Transport); ok {
			t = dt
		} else {
			t = &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true}
		}
	}
	t = t.Clone()
	dial := DialFunc(t.DialContext)
	//lint:ignore SA1019 a Transport set up with the deprecated Dial keeps dialing with it
	if d := t.Dial; dial == nil && d != nil {
		dial = func(_ context.Context, network, address string) (net.Conn, error) { return d(network, address) }
	}
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	t.DialContext = DialContext(dial) // taking priority over Dial
	return t
}
