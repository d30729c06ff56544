package recorder

// chunkCollector gathers the segments the recorder writes a chunk in (one
// per flushpoint) and hands over each chunk once it is closed, whole: for
// a disk repository, which cuts chunks at least once a second
// (WithMaxChunkAge) so that it gets one a second.
//
// Recording.deliver hands it only the segments of chunks the recording
// has from their start.
type chunkCollector struct {
	buf []byte
	// take gets each closed chunk, which it may keep, and returns the
	// buffer to gather the next in (nil for a new one).
	take func(chunk []byte) []byte
}

func (c *chunkCollector) add(seg segment) {
	if seg.first {
		c.buf = c.buf[:0]
	}
	c.buf = seg.appendTo(c.buf)
	if seg.closed {
		c.buf = c.take(c.buf)
	}
}

// withChunkSink has the recording's chunks, whole, handed to take (from
// the recorder's goroutine: take must not wait), and cuts a chunk at least
// once a second unless WithMaxChunkAge, after it, says otherwise.
func withChunkSink(take func(chunk []byte) []byte) Option {
	return optionFunc(func(c *config) {
		col := &chunkCollector{take: take}
		c.sink = col.add
		capChunkAge(c)
	})
}

// capChunkAge has a chunk cut at least once a second, for consumers of
// whole chunks.
func capChunkAge(c *config) {
	if c.maxChunkAge == 0 || c.maxChunkAge > flushInterval {
		c.maxChunkAge = flushInterval
	}
}
