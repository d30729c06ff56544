// Package eventgen writes, for event structs (package event), Commit
// methods that encode each type's fields with code written for it rather
// than with the generic per-field switch: `flightrec gen`, run by go
// generate. See event's package doc for what that buys and costs.
package eventgen
