// Package testrec gives tests of every package the recordings kept,
// gzip-compressed, in jfr/testdata: JDK 17 and 25 recordings made by
// testdata/java and ../shared/recordings; and the OpenJDK jfr tool that
// interoperability tests compare with. OpenTempDir gives tests that run
// or connect as another user a directory that user may enter.
package testrec
