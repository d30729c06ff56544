package recorder

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// WithRepository keeps the chunks of an in-memory recording (WithRing) as
// files in dir too, as the JDK's disk repository does: one file per chunk,
// written when the chunk is cut (at least once a second), the oldest
// deleted by the ring's maxSize and maxAge. A process killed or crashing
// leaves the chunks of all but about its last second there, which
// `flightrec assemble` joins into one recording.
//
// Files are named by the chunk's end time and a sequence number, so they
// sort by name in time order. Nothing is deleted when the recording stops:
// that is the caller's choice.
func WithRepository(dir string) Option {
	return optionFunc(func(c *config) {
		repo := &repository{dir: dir, limits: c}
		withChunkSink(repo.write).apply(c)
	})
}

type repository struct {
	dir string
	// limits is the config being built by Start, read once the options
	// are all applied (WithRing may come after WithRepository).
	limits *config

	mu    sync.Mutex
	seq   int
	files []repoFile
	total int64
	err   error
}

type repoFile struct {
	path string
	size int64
	end  time.Time
}

func (p *repository) write(chunk []byte) []byte {
	p.add(chunk)
	return chunk
}

func (p *repository) add(chunk []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seq == 0 {
		if err := os.MkdirAll(p.dir, 0o700); err != nil {
			p.fail(err)
			return
		}
	}
	p.seq++
	end := time.Now()
	name := fmt.Sprintf("%s_%06d.jfr", end.UTC().Format("2006_01_02_15_04_05.000"), p.seq)
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, chunk, 0o600); err != nil {
		p.fail(err)
		return
	}
	p.files = append(p.files, repoFile{path: path, size: int64(len(chunk)), end: end})
	p.total += int64(len(chunk))
	maxSize, maxAge := p.limits.maxSize, p.limits.maxAge
	for len(p.files) > 1 && ((maxSize > 0 && p.total > maxSize) || (maxAge > 0 && end.Sub(p.files[0].end) > maxAge)) {
		if err := os.Remove(p.files[0].path); err != nil && !os.IsNotExist(err) {
			p.fail(err)
		}
		p.total -= p.files[0].size
		p.files = p.files[1:]
	}
}

// fail reports the first error writing the repository on stderr: the
// recording in memory goes on.
func (p *repository) fail(err error) {
	if p.err == nil {
		p.err = err
		fmt.Fprintf(os.Stderr, "flightrec: disk repository %s: %v (later errors not shown)\n", p.dir, err)
	}
}
