package jdkio

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestHTTPTransport fetches 10,000 bytes over HTTP/1.1 and over HTTP/2 on
// TLS through Transport, from servers whose listeners are wrapped: the
// events count the bytes on the socket (headers, TLS records, HTTP/2
// frames), so each side's reads add up to at least the body and to at
// most what the other side wrote.
func TestHTTPTransport(t *testing.T) {
	body := strings.Repeat("b", 10000)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })
	for _, tls := range []bool{false, true} {
		srv := httptest.NewUnstartedServer(handler)
		srv.Listener = WrapListener(srv.Listener)
		var tr *http.Transport
		if tls {
			srv.EnableHTTP2 = true
			srv.StartTLS()
			tr = Transport(srv.Client().Transport.(*http.Transport))
			tr.TLSClientConfig.ServerName = "example.com" // the test certificate's, dialing localhost
		} else {
			srv.Start()
			tr = Transport(nil)
		}
		url := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
		var proto string
		path := record(t, allSettings(t), func() {
			client := &http.Client{Transport: tr}
			for range 3 {
				resp, err := client.Get(url)
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(b) != body {
					t.Fatalf("read %d bytes: %v", len(b), err)
				}
				proto = resp.Proto
			}
			tr.CloseIdleConnections()
			srv.Close()
			// Close does not wait for HTTP/2's frame-writing goroutines:
			// one may be between a Write that the client has read and
			// the event's Commit (seen at load average 25).
			time.Sleep(500 * time.Millisecond)
		})
		if want := map[bool]string{false: "HTTP/1.1", true: "HTTP/2.0"}[tls]; proto != want {
			t.Errorf("TLS %t: %s, want %s", tls, proto, want)
		}
		evs := readEvents(t, path)
		checkHonest(t, evs)
		byClient := func(e ioEvent) bool { return e.fields["host"] == "localhost" }
		byServer := func(e ioEvent) bool { return e.fields["host"] == "" }
		clientRead, _ := sum(evs, "jdk.SocketRead", "bytesRead", byClient)
		serverWrote, _ := sum(evs, "jdk.SocketWrite", "bytesWritten", byServer)
		clientWrote, _ := sum(evs, "jdk.SocketWrite", "bytesWritten", byClient)
		serverRead, _ := sum(evs, "jdk.SocketRead", "bytesRead", byServer)
		if clientRead <= 3*int64(len(body)) || clientRead > serverWrote || serverRead == 0 || serverRead > clientWrote {
			t.Errorf("TLS %t: the client read %d bytes of the server's %d and wrote %d, of which the server read %d",
				tls, clientRead, serverWrote, clientWrote, serverRead)
		}
		t.Logf("TLS %t (%s): client read %d, wrote %d; server read %d, wrote %d", tls, proto, clientRead, clientWrote, serverRead, serverWrote)
	}
}
