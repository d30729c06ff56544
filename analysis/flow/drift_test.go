package flow

import (
	"fmt"
	"strconv"
	"testing"
)

// clockedLogs returns the span logs of three nodes exchanging a request
// every 100 us for 2 s (node j%3 asks node (j+1)%3, which replies), each
// one-way trip taking 40 us, with node clocks clock[i](true ns).
func clockedLogs(clock [3]func(int64) int64) []Input {
	var logs [3][]byte
	for i := range logs {
		logs[i] = fmt.Appendf(nil, "0=%d\n", 1700000000000)
	}
	ev := func(node int, t int64, thread, typ, id string) {
		b := append(logs[node], "E;"...)
		b = strconv.AppendInt(b, clock[node](t), 10)
		b = append(b, ';')
		b = append(b, thread...)
		b = append(b, ';')
		b = append(b, typ...)
		if id != "" {
			b = append(b, ';')
			b = append(b, id...)
		}
		logs[node] = append(b, '\n')
	}
	for j := range 20000 {
		s, r := j%3, (j+1)%3
		t := int64(j) * 100_000
		req, rsp := fmt.Sprintf("%d:%d", s+1, j), fmt.Sprintf("%d:%d", r+1, j)
		logs[s] = fmt.Appendf(logs[s], "SPAN;null;%s\n", req)
		ev(s, t, "main", "ODStarted", req)
		logs[r] = fmt.Appendf(logs[r], "SPAN;%s;%s\n", req, rsp)
		ev(r, t+40_000, "rx", "Incoming", "")
		ev(r, t+45_000, "rx", "Handling", req)
		ev(r, t+50_000, "rx", "ODStarted", rsp)
		logs[s] = fmt.Appendf(logs[s], "SPAN;%s\n", rsp)
		ev(s, t+90_000, "rx", "Incoming", "")
		ev(s, t+95_000, "rx", "Handling", rsp)
	}
	var ins []Input
	for i, l := range logs {
		ins = append(ins, BytesInput(fmt.Sprintf("n%d.txt", i), l))
	}
	return ins
}

// negativeDeltas merges the inputs and counts receipts that come out
// earlier, in corrected time, than their message's send.
func negativeDeltas(t *testing.T, ins []Input) (int, *Merger) {
	t.Helper()
	neg := 0
	m, err := Merge(ins, nil, func(tr *Trace) error {
		sent := make(map[int32]int64)
		for i := range tr.Events {
			if e := &tr.Events[i]; isSend(e.Kind) && e.Msg >= 0 {
				sent[e.Msg] = e.Wall
			}
		}
		for i := range tr.Events {
			e := &tr.Events[i]
			if s, ok := sent[e.Msg]; ok && isReceipt(e.Kind) && e.Msg >= 0 && e.Wall < s {
				neg++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return neg, m
}

// TestClockDriftAndStep: node 1's clock drifts 1000 ppm (1 ms a second)
// and node 2's clock is 2 ms ahead, then steps 5 ms forward mid-run. One
// offset per node leaves thousands of receipts before their send; offsets
// per time bucket, interpolated for drift and split at the step, leave
// none.
func TestClockDriftAndStep(t *testing.T) {
	clocks := [3]func(int64) int64{
		func(t int64) int64 { return t },
		func(t int64) int64 { return t + t/1000 },
		func(t int64) int64 {
			if t >= 1_050_000_000 {
				return t + 7_000_000
			}
			return t + 2_000_000
		},
	}
	neg, m := negativeDeltas(t, clockedLogs(clocks))
	t.Logf("%d receipts before their send; offsets %v", neg, m.Offsets)
	if neg != 0 {
		t.Errorf("%d receipts before their send, want 0", neg)
	}
	// Offsets at 0.5 s and 1.5 s: node 1 0.5 and 1.5 ms, node 2 2 and 7 ms
	// (within 20 us: the fastest trips are equal both ways).
	for _, c := range []struct {
		node     int
		at, want int64
	}{{1, 500_000_000, 500_000}, {1, 1_500_000_000, 1_500_000}, {2, 500_000_000, 2_000_000}, {2, 1_500_000_000, 7_000_000}} {
		wall := int64(1700000000000)*1e6 + clocks[c.node](c.at)
		if got := m.OffsetAt(c.node, wall); got < c.want-20_000 || got > c.want+20_000 {
			t.Errorf("node %d at %d ns: offset %d, want %d", c.node, c.at, got, c.want)
		}
	}
}
