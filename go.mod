module github.com/flightrec/flightrec

go 1.25.0

tool honnef.co/go/tools/cmd/staticcheck

require golang.org/x/tools v0.49.0

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/cilium/ebpf v0.22.0
	golang.org/x/arch v0.30.0
	golang.org/x/exp/typeparams v0.0.0-20260209203927-2842357ff358 // indirect
	golang.org/x/mod v0.40.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0
	honnef.co/go/tools v0.7.0 // indirect
)
