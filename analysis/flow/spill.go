package flow

import (
	"fmt"
	"hash/crc32"
	"os"
	"runtime"
	"unsafe"
)

// A merge keeps a few arrays indexed by message key (the ID table's
// identities, span reference counts, first sends, open traces): tens of
// bytes per message, hundreds of megabytes at ten million messages. A
// spilled array is such an array whose pages beyond the memory budget
// live in a temporary file.
//
// The pages partition the arrays by key range, not by a hash of the ID,
// because keys are given in the order IDs are first read and both passes
// read the inputs time-aligned: at any moment the merge touches the keys
// of the messages in flight, a window of a few pages, and a page it has
// left behind is rarely wanted again. A hash partition would spread that
// window over every partition; it suits a batch grouping, but the merging
// pass is streaming and needs each message's counts as it goes. Pages
// leave memory in CLOCK order (a page touched since the hand last passed
// stays), so a message that stays open a long time keeps its page, and a
// merge whose window is wider than the budget still gives the same
// results, only with more reading and writing.

// spillPool is the memory budget shared by a merge's spilled arrays.
type spillPool struct {
	budget   int64 // bytes of resident pages; 0 for no limit
	resident int64
	dir      string
	ring     []spillPage // resident pages, in CLOCK order
	hand     int
	err      error // the first write, read or checksum error
	written  int64 // pages written
	read     int64 // pages read back
	files    []*os.File
	unlinked []bool
}

// spillPage names a resident page of one array.
type spillPage struct {
	a    spillable
	page int
}

// spillable is a spilled array, whatever its element type.
type spillable interface {
	// recent reports whether the page was touched since the last call
	// (or is the array's latest page), and forgets the touch.
	recent(page int) bool
	evict(page int)
}

func newSpillPool(budget int64, dir string) *spillPool {
	return &spillPool{budget: max(budget, 0), dir: dir}
}

// fail keeps the first error.
func (p *spillPool) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

// reserve makes room for a page of size bytes, evicting pages that were
// not touched recently; the array's latest pages are never evicted, so
// the pointers at returns stay valid until the array is touched again.
func (p *spillPool) reserve(size int64) {
	if p.budget == 0 {
		return
	}
	for passes := 0; p.resident+size > p.budget && len(p.ring) > 0 && passes < 2*len(p.ring)+1; passes++ {
		if p.hand >= len(p.ring) {
			p.hand = 0
		}
		r := p.ring[p.hand]
		if r.a.recent(r.page) {
			p.hand++
			continue
		}
		r.a.evict(r.page)
		last := len(p.ring) - 1
		p.ring[p.hand] = p.ring[last]
		p.ring = p.ring[:last]
	}
}

// newFile creates an array's spill file, removed at once where the
// system allows (the span logs do the same), so that nothing is left
// behind even when the process is killed.
func (p *spillPool) newFile() (*os.File, error) {
	f, err := os.CreateTemp(p.dir, "flightrec-flow-*.spill")
	if err != nil {
		return nil, err
	}
	unlinked := runtime.GOOS != "windows" && os.Remove(f.Name()) == nil
	p.files = append(p.files, f)
	p.unlinked = append(p.unlinked, unlinked)
	return f, nil
}

// close closes and deletes the pool's files.
func (p *spillPool) close() {
	for i, f := range p.files {
		f.Close()
		if !p.unlinked[i] {
			os.Remove(f.Name())
		}
	}
	p.files, p.unlinked = nil, nil
}

// spillElem are the element types of spilled arrays: fixed-size integers,
// whose pages go to the file as they are in memory (pageMemory). The file
// is the process's own, read back by it alone, so the byte order is the
// machine's; encoding each element (encoding/binary) took most of a
// spilling merge's time, and under the race detector, which checks every
// element's access, minutes for the spill tests.
type spillElem interface {
	~int32 | ~int64 | ~uint16 | ~uint32 | ~uint64
}

// spilled is a growable array in pages of 1<<pageBits elements, like
// paged, whose pages leave memory when the pool is over its budget.
// The zero value keeps every page in memory.
type spilled[T spillElem] struct {
	pool  *spillPool
	name  string
	pages [][]T
	touch []uint8  // per page: touchRecent, touchDirty
	sums  []uint32 // per page: CRC-32C of the page on disk, +1; 0 = not on disk
	spare []T      // an evicted page's memory, for the next page loaded
	last  int      // the page touched last
	file  *os.File
	n     int
}

const (
	touchRecent = 1 << iota
	touchDirty
)

var spillTable = crc32.MakeTable(crc32.Castagnoli)

func newSpilled[T spillElem](pool *spillPool, name string) spilled[T] {
	return spilled[T]{pool: pool, name: name}
}

func (s *spilled[T]) Len() int { return s.n }

func (s *spilled[T]) elemSize() int64 { var v T; return int64(unsafe.Sizeof(v)) }

// pageMemory is the memory of page pg, as bytes.
func pageMemory[T spillElem](pg []T) []byte {
	var v T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(pg))), len(pg)*int(unsafe.Sizeof(v)))
}

func (s *spilled[T]) pageBytes() int64 { return s.elemSize() << pageBits }

// at returns a pointer to element i, valid until the array is used again.
func (s *spilled[T]) at(i int) *T {
	pi := i >> pageBits
	pg := s.pages[pi]
	if pg == nil {
		pg = s.load(pi)
	}
	s.touch[pi] = touchRecent | touchDirty
	s.last = pi
	return &pg[i&(1<<pageBits-1)]
}

// Get returns element i. Without a pool it only reads, as no page can
// leave memory, so that goroutines may Get from an array no one appends
// to (the message identities, in the merging pass).
func (s *spilled[T]) Get(i int) T {
	pi := i >> pageBits
	if s.pool == nil {
		return s.pages[pi][i&(1<<pageBits-1)]
	}
	pg := s.pages[pi]
	if pg == nil {
		pg = s.load(pi)
	}
	s.touch[pi] |= touchRecent
	s.last = pi
	return pg[i&(1<<pageBits-1)]
}

func (s *spilled[T]) Append(v T) {
	pi := s.n >> pageBits
	if pi == len(s.pages) {
		pg := s.newPage(pi)
		s.pages = append(s.pages, pg)
		s.touch = append(s.touch, 0)
		s.sums = append(s.sums, 0)
	} else if s.pages[pi] == nil {
		s.load(pi)
	}
	s.n++
	*s.at(s.n - 1) = v
}

// newPage returns memory for page pi, making room for it in the budget.
func (s *spilled[T]) newPage(pi int) []T {
	if s.pool != nil {
		s.pool.reserve(s.pageBytes())
		s.pool.resident += s.pageBytes()
		s.pool.ring = append(s.pool.ring, spillPage{s, pi})
	}
	if pg := s.spare; pg != nil {
		s.spare = nil
		clear(pg)
		return pg
	}
	return make([]T, 1<<pageBits)
}

// load reads page pi back from the file. After an error the page reads
// as zeros: the merge goes on to a consistent end and returns the pool's
// error instead of its results.
func (s *spilled[T]) load(pi int) []T {
	pg := s.newPage(pi)
	s.pages[pi] = pg
	s.touch[pi] = 0
	p := s.pool
	if p.err != nil {
		return pg
	}
	b := pageMemory(pg)
	off := int64(pi) * s.pageBytes()
	if _, err := s.file.ReadAt(b, off); err != nil {
		clear(pg)
		p.fail(fmt.Errorf("spill file of the %s, page %d at byte offset %d: %w", s.name, pi, off, err))
		return pg
	}
	if crc32.Checksum(b, spillTable)+1 != s.sums[pi] {
		clear(pg)
		p.fail(fmt.Errorf("spill file of the %s, page %d at byte offset %d: checksum mismatch: the temporary file was changed", s.name, pi, off))
		return pg
	}
	p.read++
	return pg
}

func (s *spilled[T]) recent(pi int) bool {
	if pi == s.last {
		return true
	}
	r := s.touch[pi]&touchRecent != 0
	s.touch[pi] &^= touchRecent
	return r
}

// evict writes page pi to the file if it changed since it was read, and
// lets it go.
func (s *spilled[T]) evict(pi int) {
	p := s.pool
	pg := s.pages[pi]
	s.pages[pi] = nil
	s.spare = pg
	p.resident -= s.pageBytes()
	if s.touch[pi]&touchDirty == 0 && s.sums[pi] != 0 || p.err != nil {
		return
	}
	if s.file == nil {
		f, err := p.newFile()
		if err != nil {
			p.fail(fmt.Errorf("temporary spill file: %w", err))
			return
		}
		s.file = f
	}
	b := pageMemory(pg)
	off := int64(pi) * s.pageBytes()
	if _, err := s.file.WriteAt(b, off); err != nil {
		p.fail(fmt.Errorf("spill file of the %s, page %d at byte offset %d: %w", s.name, pi, off, err))
		return
	}
	s.sums[pi] = crc32.Checksum(b, spillTable) + 1
	p.written++
}

// release lets all of the array's pages go, in memory and on disk (the
// file's space stays taken until the pool closes).
func (s *spilled[T]) release() {
	if p := s.pool; p != nil {
		keep := p.ring[:0]
		for _, r := range p.ring {
			if r.a == spillable(s) {
				p.resident -= s.pageBytes()
			} else {
				keep = append(keep, r)
			}
		}
		clear(p.ring[len(keep):])
		p.ring = keep
	}
	*s = spilled[T]{pool: s.pool, name: s.name}
}
