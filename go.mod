module github.com/flightrec/flightrec

go 1.25.0

tool honnef.co/go/tools/cmd/staticcheck

require golang.org/x/tools v0.49.0

require (
	github.com/BurntSushi/toml v1.4.1-0.20240526193622-a339e1f7089c // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	golang.org/x/exp/typeparams v0.0.0-20231108232855-2478ac86f678 // indirect
	golang.org/x/mod v0.40.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	honnef.co/go/tools v0.7.0 // indirect
)
