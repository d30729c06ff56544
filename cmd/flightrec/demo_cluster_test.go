package main

import (
	"context"
	"os"
	"regexp"
	"testing"

	aflow "github.com/flightrec/flightrec/analysis/flow"
	"github.com/flightrec/flightrec/internal/flowspec"
)

// TestMain runs a cluster node when the demo starts this test binary as
// one.
func TestMain(m *testing.M) {
	if os.Getenv("FLIGHTREC_DEMO_NODE") != "" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestDemoCluster runs the 3-node demo and checks that every received
// message (handled or discarded) is in the same trace as its send.
func TestDemoCluster(t *testing.T) {
	t.Chdir(t.TempDir())
	code, out, errOut := runCmd(t, "demo", "--cluster", "--duration", "200ms", "--requests", "12")
	if code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errOut)
	}
	inputs := []aflow.Input{aflow.FileInput("node-A.jfr"), aflow.FileInput("node-B.jfr"), aflow.FileInput("node-C.jfr")}
	received, retrans := 0, 0
	m, err := aflow.Merge(inputs, nil, func(tr *aflow.Trace) error {
		sent := map[int32]bool{}
		for _, e := range tr.Events {
			if e.Kind == flowspec.SendStarted {
				sent[e.Msg] = true
			}
		}
		for _, e := range tr.Events {
			switch e.Kind {
			case flowspec.Received, flowspec.HandleStart, flowspec.Discard:
				received++
				if e.Msg < 0 || !sent[e.Msg] {
					t.Errorf("trace %d: %s of %s on %s without its send", tr.Index, flowspec.LogName[e.Kind], tr.MessageID(e.Msg), tr.NodeName(&e))
				}
			case flowspec.NonCausalSend:
				retrans++
				if !sent[e.Msg] {
					t.Errorf("trace %d: retransmission of %s without its send", tr.Index, tr.MessageID(e.Msg))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.Warnings != 0 || len(m.Errors) != 0 || m.IncompleteTraces != 0 {
		t.Errorf("warnings %d, errors %v, incomplete %d", m.Warnings, m.Errors, m.IncompleteTraces)
	}
	// 12 requests per node, a third of them to both peers, each answered.
	if m.TracesOut != 36 || received == 0 || retrans == 0 {
		t.Errorf("%d traces, %d receipts, %d retransmissions", m.TracesOut, received, retrans)
	}
	// Each node's line counts the --requests it made and the messages
	// they took: 8 to one peer and 4 fan-outs to two; it said "16
	// requests sent", beside "--requests 12".
	for _, node := range []string{"A", "B", "C"} {
		if !regexp.MustCompile(`(?m)^node ` + node + `: 12 requests, 16 messages sent \(a fan-out to both peers\), \d+ retransmitted$`).Match(out) {
			t.Errorf("node %s's line is missing or wrong:\n%s", node, out)
		}
	}
}
