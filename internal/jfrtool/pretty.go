package jfrtool

import "github.com/flightrec/flightrec/jfr"

type prettyPrinter struct{ *printer }

func (p *prettyPrinter) begin()             {}
func (p *prettyPrinter) end()               {}
func (p *prettyPrinter) chunk(c *jfr.Chunk) {}
func (p *prettyPrinter) event(ev *jfr.Event) {}
