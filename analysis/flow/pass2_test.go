package flow

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/flightrec/flightrec/internal/flowspec"
)

// TestIDOnlyAnEventNames: a message ID that no span lists as incoming or
// outgoing, only an event names (a handling of another message, a
// retransmission of a non-causal span without an outgoing field), is
// found in pass 2, whose inputs look IDs up on their own goroutines in a
// table only pass 1 adds to.
func TestIDOnlyAnEventNames(t *testing.T) {
	a := logInput("A.txt",
		"0=1700000000000",
		"SPAN;null;1:1",
		"E;1000;main;ODStarted;1:1",
		"SPAN;1:1",
		"E;2000;rx;Incoming",
		"E;3000;rx;Handling;1:9",
		"NC;null",
		"E;4000;timer;ODStarted;1:1")
	var msgs []string
	m, err := Merge([]Input{a}, nil, func(tr *Trace) error {
		for i := range tr.Events {
			if e := &tr.Events[i]; e.Msg >= 0 {
				msgs = append(msgs, flowspec.LogName[e.Kind]+" "+tr.MessageID(e.Msg))
			}
		}
		return nil
	})
	if err != nil || len(m.Errors) > 0 {
		t.Fatalf("merge: %v %v", err, m.Errors)
	}
	slices.Sort(msgs)
	want := []string{"Handling 1:9", "ODStarted 1:1", "Retransmission 1:1"}
	if !slices.Equal(msgs, want) {
		t.Errorf("events with messages: %q, want %q", msgs, want)
	}
}

// TestTracesDoNotShareEvents: the traces pass 2 releases take their
// events and messages from shared blocks; a caller appending to one
// trace's slices must not change another's.
func TestTracesDoNotShareEvents(t *testing.T) {
	collect := func(grow bool) [][]Event {
		var all [][]Event
		_, err := Merge(genInputs(3, 300), nil, func(tr *Trace) error {
			all = append(all, slices.Clone(tr.Events))
			if grow {
				tr.Events = append(tr.Events, Event{Text: "appended"})
				tr.Messages = append(tr.Messages, -1)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return all
	}
	want, got := collect(false), collect(true)
	if !reflect.DeepEqual(got, want) {
		t.Error("appending to a trace's events changed other traces")
	}
}

// TestFnErrorStops: when fn fails, Merge returns its error, fn is called
// no more and the counts are of the traces fn was given, though the
// traces' finishing runs ahead of fn on a goroutine of its own.
func TestFnErrorStops(t *testing.T) {
	ins := genInputs(5, 2000)
	all, err := Merge(ins, nil, func(*Trace) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	const stopAt = 700 // some batches of traceOutBatch traces in
	if all.TracesOut <= stopAt+4*traceOutBatch {
		t.Fatalf("%d traces, want more than %d", all.TracesOut, stopAt+4*traceOutBatch)
	}
	errStop := errors.New("stop")
	calls := 0
	m, err := Merge(ins, nil, func(*Trace) error {
		calls++
		if calls == stopAt {
			return errStop
		}
		return nil
	})
	if err != errStop {
		t.Errorf("Merge returned %v, want fn's error", err)
	}
	if calls != stopAt || m.TracesOut != stopAt {
		t.Errorf("fn called %d times, %d traces counted; want %d, fn not called after its error", calls, m.TracesOut, stopAt)
	}
}
