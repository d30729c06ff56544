package jfr

import (
	"bytes"
	"hash/maphash"
	"sync"
)

// MetadataCache lets readers share parsed metadata. The JVM repeats the
// same metadata record in every chunk; with a cache, readers of the chunks
// of one recording (reading them in parallel, say) parse it once. It is safe
// for concurrent use: a parsed Metadata is never modified.
type MetadataCache struct {
	mu      sync.Mutex
	seed    maphash.Seed
	entries map[uint64][]metadataEntry
}

type metadataEntry struct {
	decl []byte // the record from the metadata id on: id, strings, elements
	md   *Metadata
}

// NewMetadataCache returns an empty cache.
func NewMetadataCache() *MetadataCache {
	return &MetadataCache{seed: maphash.MakeSeed(), entries: map[uint64][]metadataEntry{}}
}

func (c *MetadataCache) get(decl []byte) *Metadata {
	if c == nil {
		return nil
	}
	h := maphash.Bytes(c.seed, decl)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries[h] {
		if bytes.Equal(e.decl, decl) {
			return e.md
		}
	}
	return nil
}

func (c *MetadataCache) put(decl []byte, md *Metadata) {
	if c == nil {
		return
	}
	h := maphash.Bytes(c.seed, decl)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[h] = append(c.entries[h], metadataEntry{bytes.Clone(decl), md})
}
