// Package bad holds types flightrec gen must refuse.
package bad

import "github.com/flightrec/flightrec/event"

type notEvent struct{ N int64 }

type badField struct {
	event.Instant
	M map[string]int
}

type generic[T any] struct {
	event.Instant
	V T
}

var _ notEvent
var _ badField
var _ generic[int]

type blank struct {
	event.Instant
	_ int32
}

var _ blank
