package flow

// openSpans finds a recording reader's open spans by number: the spans
// from their first event until their record, and the late events of
// closed spans (jfrsource.go). Span numbers count up and spans are short,
// so nearly all open spans have numbers in one window: a ring indexed by
// number, growing to hold the window; a span left behind by the window
// (one open far longer than the others) moves to a map. A map of every
// open span cost more than decoding the events.
type openSpans struct {
	base int64      // the window is base .. base+len(ring)-1
	ring []*jfrSpan // ring[num & (len-1)]
	far  map[int64]*jfrSpan
	n    int // spans in the ring
}

const (
	openRingMin = 1 << 12
	// openRingMax bounds the ring (8 MiB of pointers); past it the spans
	// the window leaves behind go to the map.
	openRingMax = 1 << 20
)

func (o *openSpans) get(num int64) *jfrSpan {
	if num >= o.base && num < o.base+int64(len(o.ring)) {
		if js := o.ring[num&int64(len(o.ring)-1)]; js != nil && js.num == num {
			return js
		}
		return nil
	}
	return o.far[num]
}

func (o *openSpans) put(js *jfrSpan) {
	num := js.num
	if o.ring == nil {
		o.ring, o.base = make([]*jfrSpan, openRingMin), num
	}
	if num < o.base {
		o.putFar(js)
		return
	}
	for num >= o.base+int64(len(o.ring)) {
		if o.n*2 >= len(o.ring) && len(o.ring) < openRingMax {
			o.grow()
			continue
		}
		// Slide the window up to num, moving what it leaves behind.
		newBase := num - int64(len(o.ring)) + 1
		if newBase-o.base >= int64(len(o.ring)) {
			for _, old := range o.ring {
				if old != nil {
					o.putFar(old)
				}
			}
			clear(o.ring)
			o.n = 0
		} else {
			mask := int64(len(o.ring) - 1)
			for b := o.base; b < newBase; b++ {
				if old := o.ring[b&mask]; old != nil {
					o.ring[b&mask] = nil
					o.n--
					o.putFar(old)
				}
			}
		}
		o.base = newBase
	}
	o.ring[num&int64(len(o.ring)-1)] = js
	o.n++
}

func (o *openSpans) putFar(js *jfrSpan) {
	if o.far == nil {
		o.far = make(map[int64]*jfrSpan)
	}
	o.far[js.num] = js
}

// grow doubles the ring, keeping the window's base.
func (o *openSpans) grow() {
	ring := make([]*jfrSpan, 2*len(o.ring))
	mask := int64(len(ring) - 1)
	for _, js := range o.ring {
		if js != nil {
			ring[js.num&mask] = js
		}
	}
	o.ring = ring
}

// remove forgets js if it is the span under its number.
func (o *openSpans) remove(js *jfrSpan) {
	num := js.num
	if num >= o.base && num < o.base+int64(len(o.ring)) {
		if i := num & int64(len(o.ring)-1); o.ring[i] == js {
			o.ring[i] = nil
			o.n--
		}
		return
	}
	if o.far[num] == js {
		delete(o.far, num)
	}
}

// each calls fn with every span, in no particular order.
func (o *openSpans) each(fn func(*jfrSpan)) {
	for _, js := range o.ring {
		if js != nil {
			fn(js)
		}
	}
	for _, js := range o.far {
		fn(js)
	}
}

// reset forgets every span.
func (o *openSpans) reset() { *o = openSpans{} }
