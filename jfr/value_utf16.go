package jfr

import (
	"unicode/utf16"
	"unicode/utf8"

	"github.com/flightrec/flightrec/internal/leb128"
)

// AppendUTF16 appends the UTF-16 code units of a string value to dst
// (resolving pooled strings). Unlike AppendText it keeps unpaired
// surrogates of strings stored as char arrays, which Java tools print
// as they are (\ud800 in JSON, '?' in UTF-8 output). Other kinds append
// nothing.
func (v Value) AppendUTF16(dst []uint16) []uint16 {
	if v.kind != KindString {
		return dst
	}
	switch v.enc {
	case encChars:
		b := v.raw()
		for len(b) > 0 {
			u, n := leb128.Uvarint(b)
			if n == 0 {
				break
			}
			b = b[n:]
			dst = append(dst, uint16(u))
		}
		return dst
	case encLatin1:
		for _, c := range v.raw() {
			dst = append(dst, uint16(c))
		}
		return dst
	case encUTF8:
		b := v.raw()
		for len(b) > 0 {
			r, n := utf8.DecodeRune(b)
			b = b[n:]
			dst = utf16.AppendRune(dst, r)
		}
		return dst
	case encPool:
		return v.Resolve().AppendUTF16(dst)
	}
	return dst
}
