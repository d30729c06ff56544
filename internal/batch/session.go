package batch

import (
	"runtime"
	"sync/atomic"
)

// Session connects the emit path to one running recorder.
type Session struct {
	Slots []Slot
	free  chan *Buffer
	// Full receives buffers that filled up; the flusher drains it.
	Full chan *Buffer

	DroppedEvents atomic.Uint64
	DroppedBytes  atomic.Uint64
}

// NewSession allocates perSlot+1 buffers for each of nslots slots.
func NewSession(nslots, perSlot int) *Session {
	n := nslots * (perSlot + 1)
	s := &Session{
		Slots: make([]Slot, nslots),
		free:  make(chan *Buffer, n),
		Full:  make(chan *Buffer, n),
	}
	for range n {
		s.free <- NewBuffer()
	}
	return s
}

var active atomic.Pointer[Session]

// Active returns the running session, or nil.
func Active() *Session { return active.Load() }

// Activate makes s the running session (nil: none).
func Activate(s *Session) { active.Store(s) }

// Slot returns slot i, or nil if i is out of range (GOMAXPROCS grew).
func (s *Session) Slot(i int) *Slot {
	if uint(i) < uint(len(s.Slots)) {
		return &s.Slots[i]
	}
	return nil
}

// Swap hands slot's buffer (if any) to the flusher and installs an empty
// one, returning it, or nil if none is free. The caller holds the slot.
func (s *Session) Swap(slot *Slot) *Buffer {
	if b := slot.Buf; b != nil {
		slot.Buf = nil
		// Full has room for every buffer, so this never blocks.
		s.Full <- b
	}
	select {
	case b := <-s.free:
		slot.Buf = b
		return b
	default:
		return nil
	}
}

// Drop counts an event of about n bytes that could not be recorded.
func (s *Session) Drop(n int) {
	s.DroppedEvents.Add(1)
	s.DroppedBytes.Add(uint64(n))
}

// Recycle returns a buffer the flusher is done with.
func (s *Session) Recycle(b *Buffer) {
	b.Reset()
	select {
	case s.free <- b:
	default:
	}
}

// Collect takes every slot's partly filled buffer (waiting for a slot an
// event is being written to) and sends it to Full.
func (s *Session) Collect() {
	for i := range s.Slots {
		slot := &s.Slots[i]
		for !slot.TryLock() {
			runtime.Gosched()
		}
		if b := slot.Buf; b != nil && len(b.Data) > 0 {
			slot.Buf = nil
			s.Full <- b
		}
		slot.Unlock()
	}
}
