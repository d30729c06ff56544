module github.com/flightrec/flightrec/view/browsertest

go 1.26.8

require (
	github.com/chromedp/cdproto v0.159.0
	github.com/chromedp/chromedp v0.23.0
	github.com/flightrec/flightrec v0.0.0
)

require (
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/google/pprof v0.0.0-20260709232956-b9395ee17fa0 // indirect
)

replace github.com/flightrec/flightrec => ../..
