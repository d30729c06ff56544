// Package jdkio records a program's socket and file I/O as the JDK's
// jdk.SocketRead, jdk.SocketWrite, jdk.FileRead, jdk.FileWrite and
// jdk.FileForce events, in the JDK 17 layouts, so that JDK Mission
// Control's Socket I/O and File I/O pages and their rules read them.
//
// Go's runtime knows how long a goroutine waited on the network or in a
// read, but not the peer, the path or the byte count, and an event without
// them misleads ("0 B to" an empty host). These opt-in wrappers know them: adopt one
// where a connection, listener, HTTP client or file is made.
//
//	ln = jdkio.WrapListener(ln)                               // accepted connections
//	conn = jdkio.WrapConn(conn)                               // one connection
//	client := &http.Client{Transport: jdkio.Transport(nil)}   // an HTTP client's connections
//	f, err := jdkio.Open("data.bin")                          // in place of os.Open (also Create, OpenFile, WrapFile)
//
// An event records one Read, Write (ReadAt, WriteAt) or Sync that lasted
// at least its type's threshold: 20 ms in the recorder's default
// settings and 10 ms in its profile settings, as the JDK's, changed as any
// setting (jdk.SocketRead#threshold=0 records every read). Its thread is
// the goroutine, and its stack trace, when the type's stackTrace setting
// is on (by default, as the JDK's), starts in the wrapper's method. While
// no recording enables a type, a wrapped call costs what any wrapper
// costs (a call more) and one predictable branch; recorded or not, it
// allocates nothing.
//
// What the events say is what happened on the wrapped object:
//
//   - Sockets: the remote IP address and port; the host is the name the
//     connection was dialed by (DialContext, Transport), or "" where there
//     is none (accepted connections, dialed IP addresses, WrapConn), as
//     the JDK leaves it for an address it was not given a name for. The
//     bytes are the socket's: TLS records rather than plaintext, HTTP/2
//     frames of every stream sharing the connection. The timeout is the
//     time left before the read deadline when the read began, in
//     milliseconds (0: none). Connections without an IP peer (Unix
//     sockets, net.Pipe) are not wrapped.
//   - Files: the path the file was opened by (os.File.Name); a file
//     without one records nothing. endOfFile is set when a read returned
//     io.EOF; FileForce's metaData is true, as fsync updates the metadata.
//
// The wrappers do not pass io.ReaderFrom and io.WriterTo through (so
// io.Copy goes through the recorded Read and Write rather than sendfile
// or splice); Conn.NetConn and File.OSFile give the wrapped objects.
package jdkio
