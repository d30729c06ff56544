module github.com/flightrec/flightrec

go 1.26.8
