// Package gzipped recognises gzip-compressed input by its magic number
// and decompresses it as it is read, so that every command takes
// recording.jfr.gz wherever it takes recording.jfr, with one error for a
// damaged gzip header.
package gzipped
