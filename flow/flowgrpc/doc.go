// Package flowgrpc records the message flow of gRPC services in one line
// each: NewServerHandler and NewClientHandler are stats handlers
// (grpc.StatsHandler, grpc.WithStatsHandler). Each RPC is a message: the
// client's span sends it (a new message ID in the flightrec-message-id
// metadata) and the server handles it in a span of its own, which
// `flightrec flow` joins into one trace; both accept and send W3C
// traceparent metadata, as flow/flowhttp does for HTTP.
package flowgrpc
