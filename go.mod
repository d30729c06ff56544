module github.com/flightrec/flightrec

go 1.25.0

tool honnef.co/go/tools/cmd/staticcheck

require (
	golang.org/x/exp v0.0.0-20260813180055-c1d0aacb2297
	golang.org/x/tools v0.49.0
)

require (
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.28.0 // indirect
	golang.org/x/net v0.58.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260209200024-4cfbd4190f57 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260209200024-4cfbd4190f57 // indirect
)

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/cilium/ebpf v0.22.0
	github.com/google/pprof v0.0.0-20260709232956-b9395ee17fa0
	go.opentelemetry.io/proto/otlp v1.10.0
	golang.org/x/arch v0.30.0
	golang.org/x/exp/typeparams v0.0.0-20260209203927-2842357ff358 // indirect
	golang.org/x/mod v0.40.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0
	google.golang.org/grpc v1.79.2
	google.golang.org/protobuf v1.36.12
	honnef.co/go/tools v0.7.0 // indirect
)
