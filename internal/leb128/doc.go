// Package leb128 encodes and decodes the variable-length integers of the
// JDK Flight Recorder format ("compressed integers").
//
// JFR varints are little-endian groups of 7 bits with a continuation bit, like
// LEB128, except that the ninth byte carries a full 8 bits: a 64-bit value never
// needs more than 9 bytes. There is no zig-zag: negative numbers are written as
// their two's-complement bit pattern, masked to the width of the field's type.
//
// Writers often reserve a fixed number of bytes for a size and patch it in later
// ("padded" varints: every byte but the last has the continuation bit set).
// Decoders here accept any such non-minimal form; encoders offer both the
// minimal form and the padded form used for back-patching.
package leb128
