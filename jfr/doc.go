// Package jfr reads and writes JDK Flight Recorder files: chunk format 2.x,
// as OpenJDK 17 and 25 write it (the tests read recordings of both).
//
// Reading: NewReader and NewBytesReader walk a recording chunk by chunk
// (NextChunk), record by record (ReadRecord, ReadRecords) or event by
// event (ReadEvent), resolving constant pools the way the JDK's reader
// does; DecodeEventLazy leaves an event's fields undecoded until they are
// asked for. ScanChunksAt and RecordScanner read a file's chunk headers
// and record headers only, for summaries and parallel readers. Follow reads
// a file that is still being written, and LiveChunk the flushes of a chunk
// handed over in pieces, as a stream receives them. Sizes and constant-pool
// counts are 64-bit varints, so checkpoints may exceed 1<<28 bytes.
//
// Every decoding error is a *FormatError naming the chunk and byte offset;
// no input makes the reader panic (the package is fuzzed), and a reader
// allocates as data arrives, never up front from a size read from the file.
//
// Writing: MetadataBuilder declares event and struct types (the JDK 17
// layouts of jdk.* types included); Writer writes chunks with their
// metadata, constant pools and flushpoints that `jfr` and JDK Mission
// Control read. AppendReservation and AppendReserved lay out the
// reservation pages with which a writer grows a file so that a kill at any
// moment leaves it readable.
package jfr
