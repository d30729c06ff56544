package flow

// paged is a growable array stored in fixed pages of 64 Ki elements. Unlike
// a slice it never copies itself to grow, so a table of ten million
// entries never has an old and a new backing array alive at once, and its
// slack is at most one page.
type paged[T any] struct {
	pages [][]T
	n     int
}

const pageBits = 16

func (p *paged[T]) Len() int { return p.n }

func (p *paged[T]) at(i int) *T { return &p.pages[i>>pageBits][i&(1<<pageBits-1)] }

func (p *paged[T]) Get(i int) T { return *p.at(i) }

func (p *paged[T]) Set(i int, v T) { *p.at(i) = v }

func (p *paged[T]) Append(v T) {
	if p.n>>pageBits == len(p.pages) {
		p.pages = append(p.pages, make([]T, 1<<pageBits))
	}
	*p.at(p.n) = v
	p.n++
}

// arenaPage is the size of one page of the ID text arena; an ID never
// spans two pages.
const arenaPage = 1 << 20
