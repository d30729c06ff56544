// Package peers holds benchmarks that measure flightrec's emit path side by
// side with other tracing and logging libraries (runtime/trace, zerolog,
// OpenTelemetry) in one go test -bench run:
//
//	cd bench/peers && go test -run '^$' -bench . -benchmem -count 5
//
// It is a module of its own so that flightrec's go.mod does not require the
// peers: a requirement there would raise the versions of zerolog and
// OpenTelemetry that programs importing flightrec build with.
package peers
