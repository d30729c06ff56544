// Package browsertest drives `flightrec view` in a headless Chromium with
// chromedp: every page renders with data, without console errors, without
// a request leaving the server, and draws a non-blank screenshot; hovering
// a flame-graph frame shows its name and brushing a time range on the
// timeline shrinks the flame graph's total.
//
// It is a module of its own so that chromedp stays out of flightrec's
// go.mod. Run it with `cd view/browsertest && go test ./...`; it skips
// when no Chromium is installed (Debian: chromium-headless-shell).
// FLIGHTREC_SCREENSHOTS=DIR keeps the screenshots (the README's come from
// there).
package browsertest
