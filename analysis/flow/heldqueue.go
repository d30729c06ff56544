package flow

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"slices"
)

// A recording's reader holds each span from its record until the chunk
// after the record's has been read, in case one of its events was
// flushed late (jfrsource.go): two chunks of spans per input, some 350
// thousand generated spans and tens of megabytes. They are complete but
// for the rare late event, and they leave in the order their records
// came: a queue. heldQueue keeps their encoded bytes in fixed-size
// blocks, the blocks past a small budget in a temporary file (unlinked at
// creation, each block checksummed, as the spilled arrays' pages are),
// where they wait sequentially, written once and read back once.

// heldQueue is a queue of byte strings in blocks of blockSize bytes.
// Only the head block (being read), the tail block (being filled) and
// keep other blocks stay in memory; a block filled beyond them goes to
// the file, into a slot a block already read back freed if there is one,
// so the file is as large as the most blocks waiting at once.
type heldQueue struct {
	pool      *spillPool // creates and removes the file
	blockSize int
	keep      int
	blocks    []heldBlock // head first
	off       int         // read offset in blocks[0]
	resident  int         // blocks in memory
	spare     [][]byte    // the memory of blocks read or written out
	file      *os.File
	slots     []int64 // free slots of the file
	nslots    int64
	noFile    bool  // the file could not be created or written: blocks stay in memory
	fileErr   error // why, naming the file (and so its directory) and the OS error
	n         int   // entries queued
	hdr       [4]byte
}

// heldBlock is a block of the queue, in memory or in the file.
type heldBlock struct {
	data []byte // nil while in the file
	n    int    // bytes written into it
	slot int64
	sum  uint32 // CRC-32C of the block in the file
}

const (
	heldBlockSize = 256 << 10
	// heldKeepBlocks: with the head and the tail, 1 MiB per input stays
	// in memory.
	heldKeepBlocks = 2
)

func newHeldQueue(dir string) heldQueue {
	return heldQueue{pool: newSpillPool(0, dir), blockSize: heldBlockSize, keep: heldKeepBlocks}
}

// push adds head and body, as one entry.
func (q *heldQueue) push(head, body []byte) {
	binary.LittleEndian.PutUint32(q.hdr[:], uint32(len(head)+len(body)))
	q.write(q.hdr[:])
	q.write(head)
	q.write(body)
	q.n++
}

func (q *heldQueue) write(p []byte) {
	for len(p) > 0 {
		if len(q.blocks) == 0 || q.blocks[len(q.blocks)-1].n == q.blockSize {
			if len(q.blocks) > 1 && q.resident-1 > q.keep {
				// The full tail is read after every block before it.
				q.writeOut(&q.blocks[len(q.blocks)-1])
			}
			q.blocks = append(q.blocks, heldBlock{data: q.newData()})
		}
		t := &q.blocks[len(q.blocks)-1]
		k := copy(t.data[t.n:q.blockSize], p)
		t.n += k
		p = p[k:]
	}
}

func (q *heldQueue) newData() []byte {
	q.resident++
	if n := len(q.spare); n > 0 {
		d := q.spare[n-1]
		q.spare = q.spare[:n-1]
		return d
	}
	return make([]byte, q.blockSize)
}

func (q *heldQueue) dropData(b *heldBlock) {
	if len(q.spare) < 2 {
		q.spare = append(q.spare, b.data)
	}
	b.data = nil
	q.resident--
}

// writeOut moves a full block to the file. A block the file cannot take
// stays in memory, as every later one: the results stay right, only the
// memory is no longer bounded, which fileErr tells the reader.
func (q *heldQueue) writeOut(b *heldBlock) {
	if q.noFile {
		return
	}
	if q.file == nil {
		f, err := q.pool.newFile()
		if err != nil {
			q.noFile, q.fileErr = true, fmt.Errorf("temporary file of the held spans: %w", err)
			return
		}
		q.file = f
	}
	slot := q.nslots
	if n := len(q.slots); n > 0 {
		slot = q.slots[n-1]
		q.slots = q.slots[:n-1]
	} else {
		q.nslots++
	}
	if _, err := q.file.WriteAt(b.data, slot*int64(q.blockSize)); err != nil {
		q.slots = append(q.slots, slot)
		q.noFile, q.fileErr = true, fmt.Errorf("temporary file of the held spans: %w", err)
		return
	}
	b.slot, b.sum = slot, crc32.Checksum(b.data, spillTable)
	q.dropData(b)
}

// pop removes the oldest entry and returns it in dst's memory.
func (q *heldQueue) pop(dst []byte) ([]byte, error) { return q.popAppend(dst[:0]) }

// popAppend removes the oldest entry and appends it to dst, as append
// does: the bytes of dst stay where they are unless dst has to grow. A
// recording's reader pops a span straight into the read-ahead batch that
// takes it. On an error dst comes back as it was given.
func (q *heldQueue) popAppend(dst []byte) ([]byte, error) {
	if q.n == 0 {
		return dst, errors.New("internal error: no span held")
	}
	q.n--
	if err := q.read(q.hdr[:]); err != nil {
		return dst, err
	}
	start := len(dst)
	dst = slices.Grow(dst, int(binary.LittleEndian.Uint32(q.hdr[:])))
	dst = dst[:start+int(binary.LittleEndian.Uint32(q.hdr[:]))]
	if err := q.read(dst[start:]); err != nil {
		return dst[:start], err
	}
	return dst, nil
}

func (q *heldQueue) read(p []byte) error {
	for len(p) > 0 {
		if len(q.blocks) == 0 || q.blocks[0].n == 0 {
			return errors.New("internal error: held spans cut short")
		}
		h := &q.blocks[0]
		if h.data == nil {
			if err := q.readBack(h); err != nil {
				return err
			}
		}
		k := copy(p, h.data[q.off:h.n])
		q.off += k
		p = p[k:]
		if q.off < h.n {
			continue
		}
		q.off = 0
		if len(q.blocks) == 1 && h.n < q.blockSize {
			h.n = 0 // the queue is empty: its tail starts over
			continue
		}
		q.dropData(h)
		q.blocks = q.blocks[:copy(q.blocks, q.blocks[1:])]
	}
	return nil
}

// readBack reads a block from the file and checks it.
func (q *heldQueue) readBack(b *heldBlock) error {
	data := q.newData()
	off := b.slot * int64(q.blockSize)
	if _, err := q.file.ReadAt(data, off); err != nil {
		q.dropData(&heldBlock{data: data})
		return fmt.Errorf("temporary file of the held spans, block at byte offset %d: %w", off, err)
	}
	if crc32.Checksum(data, spillTable) != b.sum {
		q.dropData(&heldBlock{data: data})
		return fmt.Errorf("temporary file of the held spans, block at byte offset %d: checksum mismatch: the temporary file was changed", off)
	}
	b.data = data
	q.slots = append(q.slots, b.slot)
	return nil
}

// reset empties the queue, keeping its file and its memory.
func (q *heldQueue) reset() {
	for i := range q.blocks {
		if q.blocks[i].data != nil {
			q.dropData(&q.blocks[i])
		}
	}
	q.blocks, q.off, q.n, q.slots = q.blocks[:0], 0, 0, q.slots[:0]
	for i := range q.nslots {
		q.slots = append(q.slots, i)
	}
}

// close removes the file.
func (q *heldQueue) close() { q.pool.close() }

// heldNums is the set of the numbers of the spans in a reader's queue, so
// that a late event or a second record finds its span's number held: a
// bitmap in pages of 64 Ki numbers, a page dropped once it empties.
// Numbers are added near the newest and removed near the oldest, so each
// end has its page cached.
type heldNums struct {
	pages            map[int64]*heldPage
	addKey, delKey   int64
	addPage, delPage *heldPage
}

type heldPage struct {
	bits [1 << 10]uint64
	n    int
}

const heldPageBits = 16

func (h *heldNums) page(num int64, create bool) *heldPage {
	key := num >> heldPageBits
	if h.addPage != nil && h.addKey == key {
		return h.addPage
	}
	if h.delPage != nil && h.delKey == key {
		return h.delPage
	}
	p := h.pages[key]
	if p == nil && create {
		if h.pages == nil {
			h.pages = make(map[int64]*heldPage)
		}
		p = &heldPage{}
		h.pages[key] = p
	}
	return p
}

func (h *heldNums) has(num int64) bool {
	p := h.page(num, false)
	i := num & (1<<heldPageBits - 1)
	return p != nil && p.bits[i>>6]&(1<<(i&63)) != 0
}

func (h *heldNums) add(num int64) {
	p := h.page(num, true)
	h.addKey, h.addPage = num>>heldPageBits, p
	i := num & (1<<heldPageBits - 1)
	if p.bits[i>>6]&(1<<(i&63)) == 0 {
		p.bits[i>>6] |= 1 << (i & 63)
		p.n++
	}
}

func (h *heldNums) remove(num int64) {
	p := h.page(num, false)
	i := num & (1<<heldPageBits - 1)
	if p == nil || p.bits[i>>6]&(1<<(i&63)) == 0 {
		return
	}
	p.bits[i>>6] &^= 1 << (i & 63)
	key := num >> heldPageBits
	if p.n--; p.n == 0 {
		delete(h.pages, key)
		if h.addPage == p {
			h.addPage = nil
		}
		h.delPage = nil
		return
	}
	h.delKey, h.delPage = key, p
}
