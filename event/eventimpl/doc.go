// Package eventimpl is what the code `flightrec gen` writes calls: the
// faster Commit methods of event structs, and the check that such a
// method still matches its struct. It is for generated code only, and its
// API may change with flightrec gen (regenerate after upgrading).
//
// Nothing here is promoted into an event struct, and nothing a program
// would call by mistake: Record pins the goroutine to its P until the
// Writer's Unpin, so calling it by hand, without encoding exactly the
// event's fields and ending with End and Unpin, corrupts recordings or
// stops the process. Use the event type's Commit instead, generated or
// not.
package eventimpl
