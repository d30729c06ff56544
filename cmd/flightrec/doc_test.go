package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestDocListsCommands keeps the command list of the package comment
// (what go doc shows) the same as the commands flightrec runs.
func TestDocListsCommands(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for line := range strings.SplitSeq(string(src), "\n") {
		if l, ok := strings.CutPrefix(line, "//\t"); ok && !strings.HasPrefix(l, "flightrec ") {
			listed = append(listed, l)
		}
	}
	var want []string
	for _, c := range commands() {
		if c.Short != "" {
			want = append(want, fmt.Sprintf("%-10s %s", c.Name, c.Short))
		}
	}
	if strings.Join(listed, "\n") != strings.Join(want, "\n") {
		t.Errorf("doc.go lists the commands\n%s\nflightrec has\n%s", strings.Join(listed, "\n"), strings.Join(want, "\n"))
	}
}
