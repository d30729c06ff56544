// Package view serves recordings to a browser: `flightrec view`.
//
// Open indexes the files once: every chunk of every file is decoded on its
// own goroutine (at most GOMAXPROCS at a time), keeping per event only a
// few columns (start, duration, type, thread, interned stack, file offset)
// and per event type its counts, sizes and a time histogram. Pages of rows
// are decoded again from the mapped files on demand, so the index stays
// well under the size of the files.
//
// Server answers a JSON API under /api/ (documented in api.go and the
// README) and serves the page and its scripts, embedded with go:embed:
// plain JavaScript drawing on canvas (flame graph, timeline) and SVG
// (sequence diagrams), no third-party code and nothing fetched from
// elsewhere. It answers loopback clients addressing it by a loopback
// host name only, with a Content-Security-Policy that keeps the page to
// its own origin.
package view
