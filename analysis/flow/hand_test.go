package flow

import (
	"strings"
	"testing"
)

func logInput(name string, lines ...string) Input {
	return BytesInput(name, []byte(strings.Join(lines, "\n")+"\n"))
}

// eventOrder returns "node:Type payload" of every event line of a trace
// log, in order.
func eventOrder(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		f := strings.Split(l, "|")
		if len(f) >= 7 {
			out = append(out, strings.TrimSpace(f[4])+":"+strings.Join(f[6:], "|"))
		}
	}
	return out
}

func wantLines(t *testing.T, what, text string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(text, l) {
			t.Errorf("%s lacks %q:\n%s", what, l, text)
		}
	}
}

// TestSkewedReceiver: the server's wall clock is 3 ms behind the client's.
// By the raw wall clocks the server receives the request 2.6 ms before the
// client sends it.
//
// True times (µs after 22:13:20.000): client sends c|s|1 at 1100, server
// receives at 1500 (400 µs), hands off, handles at 1650, replies s|c|1 at
// 2200, client receives at 2600 (400 µs), handles at 2720; the client's
// operation ends at 2900. Server nanoTime = 5e9 + true ns; server wall =
// true - 3000 µs.
func TestSkewedReceiver(t *testing.T) {
	client := logInput("client.txt",
		"0=1700000000000",
		"SPAN;s|c|1",
		"E;2600000;rx;Incoming;",
		"E;2620000;rx;THStarted;",
		"E;2630000;rx;TPComplete;",
		"E;2700000;worker;THSuccess;",
		"E;2720000;worker;Handling;s|c|1",
		"E;2730000;worker;MsgTag;RSP_GetCommand",
		"E;2800000;worker;TPComplete;",
		"SPAN;null;c|s|1",
		"E;1000000;main;FlowTag;GET",
		"E;1100000;main;ODStarted;c|s|1",
		"E;1150000;main;ODFinished;",
		"E;2900000;main;Checkpoint;GET_exit",
	)
	server := logInput("server.txt",
		"5000000000=1699999999997",
		"SPAN;c|s|1;s|c|1",
		"E;5001500000;rx;Incoming;",
		"E;5001520000;rx;THStarted;",
		"E;5001530000;rx;TPComplete;",
		"E;5001600000;worker-1;THSuccess;",
		"E;5001650000;worker-1;Handling;c|s|1",
		"E;5001660000;worker-1;MsgTag;GetCommand",
		"E;5002200000;worker-1;ODStarted;s|c|1",
		"E;5002250000;worker-1;ODFinished;",
		"E;5002300000;worker-1;TPComplete;",
	)
	r := mergeInputs(t, []Input{client, server})
	// Offsets: d(client,server) = R_s - T_c by the raw walls
	// = (1500 - 3000) - 1100 = -2600 µs; d(server,client) = 2600 -
	// (2200 - 3000) = 3400 µs; offset(server) - offset(client) =
	// (-2600 - 3400) / 2 = -3000 µs: exactly the skew, so corrected times
	// are the true times.
	if r.m.Offsets[0] != 0 || r.m.Offsets[1] != -3_000_000 {
		t.Errorf("offsets %v, want [0 -3000000]", r.m.Offsets)
	}
	want := []string{
		"client:FlowTag GET", "client:ODStarted c|s|1", "client:ODFinished",
		"server:Incoming c|s|1", "server:THStarted", "server:TPComplete", "server:THSuccess",
		"server:Handling c|s|1", "server:MsgTag GetCommand", "server:ODStarted s|c|1",
		"server:ODFinished", "server:TPComplete",
		"client:Incoming s|c|1", "client:THStarted", "client:TPComplete", "client:THSuccess",
		"client:Handling s|c|1", "client:MsgTag RSP_GetCommand", "client:TPComplete",
		"client:Checkpoint GET_exit",
	}
	if got := eventOrder(r.traces); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("order\n got %q\nwant %q", got, want)
	}
	// The server's receipt is printed at its true time, 1.5 ms, not at the
	// raw 22:13:19.998.
	wantLines(t, "trace log", r.traces,
		"22:13:20.001|0 ms|       |.  * |server|rx      |Incoming c|s|1\n",
		"22:13:20.002|1 ms| 540 us|.   *|server|worker-1|ODStarted s|c|1\n")
	msgs := section(r.stats, "MESSAGES")
	// One-way latency between the corrected clocks: the offset splits
	// the round trip (R_s - T_c) + (R_c - T_s) = 800 us evenly, 400 us
	// each way. Incoming to handle: server 1650 - 1500 = 150 us, client
	// 2720 - 2600 = 120 us.
	wantLines(t, "messages report", msgs,
		"GetCommand\n\tIncoming to handle times:\n\t\tserver:\t"+one("150.000 us")+"\n",
		"\t\tclient\t -> server:\t"+route(1, 1, 0, 0, 0, 0)+"\n\t\tclient\t -> server:\tlatency "+one("400.000 us")+"\n",
		"RSP_GetCommand\n\tIncoming to handle times:\n\t\tclient:\t"+one("120.000 us")+"\n",
		"\t\tserver\t -> client:\tlatency "+one("400.000 us")+"\n",
		"\t\tMean latency:\t400.000 us\tUnique messages:         1\tTotal messages:         1\n")
	// Processing: client main 1000..2900 = 1900, client rx 2600..2630 =
	// 30, client worker 2700..2800 = 100, server rx 1500..1530 = 30,
	// server worker-1 1600..2300 = 700: 2760 us in 5 segments. Wall
	// delta: whole milliseconds, 2 - 1 = 1 ms.
	wantLines(t, "traces report", section(r.stats, "TRACES"),
		"GET:\t1 traces, avg 2.00 msg (2 - 2)\n\t1.00x: GetCommand\n\t1.00x: RSP_GetCommand\n",
		"\tavg 2.00 nodes, avg 5.00 threads (5 - 5)\n\tProcessing took avg 2760.00 us (2760.00 - 2760.00)\n\tWall time delta 1.00 ms (1 - 1)\n")
}

// TestBidirectionalOffset: beta's wall clock is 2.5 s ahead of alpha's,
// traffic goes both ways, alpha->beta takes 300 µs and beta->alpha 500 µs.
//
// Trace PUT: alpha sends a|b|1 at 10.1 ms, beta receives at 10.4 and
// handles at 10.45, replies b|a|1 at 11.0, alpha receives at 11.5 and
// handles at 11.52; alpha ends at 12.0. Trace GET: beta sends b|a|2 at
// 20.1, alpha receives at 20.6, handles at 20.62, replies a|b|2 at 21.0,
// beta receives at 21.3, handles at 21.32; beta ends at 22.0. (True times,
// ms after 22:13:20.) Every message is tagged Cmd.
func TestBidirectionalOffset(t *testing.T) {
	alpha := logInput("alpha.txt",
		"0=1700000000000",
		"SPAN;b|a|1",
		"E;11500000;rx;Incoming;",
		"E;11520000;rx;Handling;b|a|1",
		"E;11530000;rx;MsgTag;Cmd",
		"SPAN;null;a|b|1",
		"E;10000000;main;FlowTag;PUT",
		"E;10100000;main;ODStarted;a|b|1",
		"E;12000000;main;Checkpoint;PUT_exit",
		"SPAN;b|a|2;a|b|2",
		"E;20600000;rx;Incoming;",
		"E;20620000;rx;Handling;b|a|2",
		"E;20630000;rx;MsgTag;Cmd",
		"E;21000000;rx;ODStarted;a|b|2",
	)
	// beta: nanoTime 0 at true 0 too, wall 2.5 s ahead.
	beta := logInput("beta.txt",
		"0=1700000002500",
		"SPAN;a|b|1;b|a|1",
		"E;10400000;rx;Incoming;",
		"E;10450000;rx;Handling;a|b|1",
		"E;10460000;rx;MsgTag;Cmd",
		"E;11000000;rx;ODStarted;b|a|1",
		"SPAN;a|b|2",
		"E;21300000;rx;Incoming;",
		"E;21320000;rx;Handling;a|b|2",
		"E;21330000;rx;MsgTag;Cmd",
		"SPAN;null;b|a|2",
		"E;20000000;main;FlowTag;GET",
		"E;20100000;main;ODStarted;b|a|2",
		"E;22000000;main;Checkpoint;GET_exit",
	)
	r := mergeInputs(t, []Input{alpha, beta})
	// d(alpha,beta) = min(10.4 + 2500 - 10.1, 21.3 + 2500 - 21.0) ms =
	// 2500.3 ms; d(beta,alpha) = min(11.5 - 2511.0, 20.6 - 2520.1) =
	// -2499.5 ms; offset(beta) = (2500.3 + 2499.5) / 2 = 2499.9 ms. The
	// 0.1 ms error is half the latency asymmetry, which no estimator from
	// one-way times can see; beta's corrected times are 0.1 ms late.
	if r.m.Offsets[1]-r.m.Offsets[0] != 2_499_900_000 {
		t.Errorf("offsets %v, want beta - alpha = 2499900000 ns", r.m.Offsets)
	}
	want := []string{
		// PUT
		"alpha:FlowTag PUT", "alpha:ODStarted a|b|1",
		"beta:Incoming a|b|1", "beta:Handling a|b|1", "beta:MsgTag Cmd", "beta:ODStarted b|a|1",
		"alpha:Incoming b|a|1", "alpha:Handling b|a|1", "alpha:MsgTag Cmd", "alpha:Checkpoint PUT_exit",
		// GET
		"beta:FlowTag GET", "beta:ODStarted b|a|2",
		"alpha:Incoming b|a|2", "alpha:Handling b|a|2", "alpha:MsgTag Cmd", "alpha:ODStarted a|b|2",
		"beta:Incoming a|b|2", "beta:Handling a|b|2", "beta:MsgTag Cmd", "beta:Checkpoint GET_exit",
	}
	if got := eventOrder(r.traces); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("order\n got %q\nwant %q", got, want)
	}
	// beta's receipt of a|b|1: true 10.4 ms, corrected 10.5 ms; raw it
	// would be printed 2.5 s later.
	wantLines(t, "trace log", r.traces, "22:13:20.010|0 ms|       |. *|beta |rx  |Incoming a|b|1\n")
	// One-way latency between the corrected clocks: true 300 us
	// alpha->beta and 500 us back, but the offset is off by half the
	// asymmetry (0.1 ms), so both read 400 us: the limit of any estimate
	// from one-way times. Routes: 2 messages each way, each once: unique
	// 4, total 4 (the reference added the reverse route to both totals
	// twice: 6 and 6). Incoming to handle: alpha 20, 20 us, beta 50,
	// 20 us.
	wantLines(t, "messages report", section(r.stats, "MESSAGES"),
		"Cmd\n\tIncoming to handle times:\n\t\talpha:\tn 2, mean 20.000 us, p50 20.000 us, p90 20.000 us, p99 20.000 us, max 20.000 us\n"+
			"\t\tbeta:\tn 2, mean 35.000 us, p50 20.000 us, p90 50.000 us, p99 50.000 us, max 50.000 us\n\tTransport:\n"+
			"\t\talpha\t -> beta:\t"+route(2, 2, 0, 0, 0, 0)+"\n"+
			"\t\talpha\t -> beta:\tlatency n 2, mean 400.000 us, p50 400.000 us, p90 400.000 us, p99 400.000 us, max 400.000 us\n"+
			"\t\talpha\t<-  beta:\t"+route(2, 2, 0, 0, 0, 0)+"\n"+
			"\t\talpha\t<-  beta:\tlatency n 2, mean 400.000 us, p50 400.000 us, p90 400.000 us, p99 400.000 us, max 400.000 us\n"+
			"\t\tMean latency:\t400.000 us\tUnique messages:         4\tTotal messages:         4\n")
	// GET: beta main 20.0..22.0 = 2000 us, alpha rx 20.6..21.0 = 400 us
	// (no TPComplete: the segment ends at the thread's last event), beta
	// rx 21.3..21.33 = 30 us: 2430 us in 3 segments. PUT: alpha main
	// 10.0..12.0 = 2000, beta rx 10.4..11.0 = 600, alpha rx 11.5..11.53 =
	// 30: 2630 us.
	wantLines(t, "traces report", section(r.stats, "TRACES"),
		"GET:\t1 traces, avg 2.00 msg (2 - 2)\n\t2.00x: Cmd\n\tavg 2.00 nodes, avg 3.00 threads (3 - 3)\n\tProcessing took avg 2430.00 us (2430.00 - 2430.00)\n",
		"PUT:\t1 traces, avg 2.00 msg (2 - 2)\n\t2.00x: Cmd\n\tavg 2.00 nodes, avg 3.00 threads (3 - 3)\n\tProcessing took avg 2630.00 us (2630.00 - 2630.00)\n")
}

// TestNetworkDuplicate: A sends m once, the network delivers it to B twice
// and B handles both copies. The reference counted the second copy both as
// duplicate and as ignored (total 3 for 2 receptions).
func TestNetworkDuplicate(t *testing.T) {
	a := logInput("A.txt",
		"0=1700000000000",
		"SPAN;null;A|B|m",
		"E;1000000;main;ODStarted;A|B|m",
	)
	b := logInput("B.txt",
		"0=1700000000000",
		"SPAN;A|B|m",
		"E;1200000;rx;Incoming;",
		"E;1300000;rx;Handling;A|B|m",
		"SPAN;A|B|m",
		"E;1250000;rx;Incoming;",
		"E;1400000;rx;Handling;A|B|m",
	)
	r := mergeInputs(t, []Input{a, b})
	if len(r.list) != 1 {
		t.Fatalf("%d traces, want 1", len(r.list))
	}
	// One transmission (1.0 ms), two copies (1.2 and 1.25 ms): the first
	// is matched and handled (unique), the second has no transmission left
	// (duplicate). Total 2. Incoming to handle 100 and 150 us.
	wantLines(t, "messages report", section(r.stats, "MESSAGES"),
		"-no-tag-\n\tIncoming to handle times:\n\t\tB:\tn 2, mean 125.000 us, p50 100.000 us, p90 150.000 us, p99 150.000 us, max 150.000 us\n",
		"\t\tA\t -> B:\t        1 unique,         2 total,     0 discarded,     0 ignored,     0 lost,     1 duplicate\n",
		"Unique messages:         1\tTotal messages:         2\n")
	wantLines(t, "trace log", r.traces, "A\t-> B, B:\tA|B|m\n")
}

// TestHeartbeatIDs: heartbeats identified by the sender's or receiver's
// Unix second. A sends A|FD_ALL1700000000 at 22:13:20.999 and B, receiving
// at 22:13:21.001, computes A|FD_ALL1700000001: the halves do not pair.
// Then A sends two heartbeats in one second, which share an ID.
func TestHeartbeatIDs(t *testing.T) {
	a := logInput("A.txt",
		"0=1700000000000",
		"SPAN;null;A|FD_ALL1700000000",
		"E;999000000;timer;ODStarted;A|FD_ALL1700000000",
		"SPAN;null;A|FD_ALL1700000002",
		"E;2100000000;timer;ODStarted;A|FD_ALL1700000002",
		"SPAN;null;A|FD_ALL1700000002",
		"E;2600000000;timer;ODStarted;A|FD_ALL1700000002",
	)
	b := logInput("B.txt",
		"0=1700000000000",
		"SPAN;A|FD_ALL1700000001",
		"E;1001000000;rx;Incoming;",
		"E;1001100000;rx;Handling;A|FD_ALL1700000001",
		"E;1001200000;rx;MsgTag;FD",
		"SPAN;A|FD_ALL1700000002",
		"E;2100500000;rx;Incoming;",
		"E;2100600000;rx;Handling;A|FD_ALL1700000002",
		"E;2100700000;rx;MsgTag;FD",
		"SPAN;A|FD_ALL1700000002",
		"E;2600500000;rx;Incoming;",
		"E;2600600000;rx;Handling;A|FD_ALL1700000002",
		"E;2600700000;rx;MsgTag;FD",
	)
	r := mergeInputs(t, []Input{a, b})
	// Three traces: the unpaired send, the unpaired receipt, and the two
	// heartbeats sharing A|FD_ALL1700000002 (all four spans mention it).
	if len(r.list) != 3 {
		t.Fatalf("%d traces, want 3:\n%s", len(r.list), r.traces)
	}
	wantLines(t, "trace log", r.traces,
		"A\t-> -nobody-:\tA|FD_ALL1700000000\n",
		"-unknown-\t-> B:\tA|FD_ALL1700000001\n",
		"A\t-> B, B:\tA|FD_ALL1700000002\n")
	// The paired ID: two transmissions (2.1, 2.6 s), two copies (2.1005,
	// 2.6005 s), each matched to the transmission just before it; B
	// handled the ID twice: 1 unique + 1 ignored, nothing lost or
	// duplicated. The unpaired halves count once each as not detected /
	// not received.
	wantLines(t, "messages report", section(r.stats, "MESSAGES"),
		"FD\n\tIncoming to handle times:\n\t\tB:\tn 2, mean 100.000 us, p50 100.000 us, p90 100.000 us, p99 100.000 us, max 100.000 us\n",
		"\t\tA\t -> B:\t        1 unique,         2 total,     0 discarded,     1 ignored,     0 lost,     0 duplicate\n",
		"Transmission of 1 messages not detected.\n1 messages have not been received at all.\n")
	// The lone receipt must not wait for a send that never comes.
	if r.m.IncompleteTraces != 0 {
		t.Errorf("%d incomplete traces", r.m.IncompleteTraces)
	}
}

// TestOneWayLatencyPerTag: Reserve requests wait 12 ms to reach the
// inventory, replies take 94 us back; a fast ping each way pins the clock
// offset. Each direction and tag gets its own latency (the old symmetric
// pair mean printed 6 ms under both tags).
func TestOneWayLatencyPerTag(t *testing.T) {
	// True times in ns after 22:13:20; inventory's clock is 3 ms ahead.
	orders := logInput("orders.txt", "0=1700000000000",
		"SPAN;null;1:1", "E;1000000;main;ODStarted;1:1",
		"SPAN;2:1", "E;2050000;rx;Incoming", "E;2060000;rx;Handling;2:1", "E;2070000;rx;MsgTag;Ping",
		"SPAN;null;1:2", "E;10000000;main;FlowTag;RESERVE", "E;10000000;main;ODStarted;1:2",
		"SPAN;2:2", "E;22094000;rx;Incoming", "E;22100000;rx;Handling;2:2", "E;22110000;rx;MsgTag;ReserveReply")
	inventory := logInput("inventory.txt", "3000000=1700000000000",
		"SPAN;1:1", "E;4050000;rx;Incoming", "E;4060000;rx;Handling;1:1", "E;4070000;rx;MsgTag;Ping",
		"SPAN;null;2:1", "E;5000000;main;ODStarted;2:1",
		"SPAN;1:2;2:2", "E;25000000;rx;Incoming", "E;25010000;rx;Handling;1:2", "E;25020000;rx;MsgTag;Reserve",
		"E;25000000;rx;ODStarted;2:2")
	r := mergeInputs(t, []Input{orders, inventory})
	msgs := section(r.stats, "MESSAGES")
	wantLines(t, "messages report", msgs,
		"Reserve\n\tIncoming to handle times:\n",
		"\t\torders\t -> inventory:\tlatency "+one("12.000 ms")+"\n",
		"ReserveReply\n\tIncoming to handle times:\n",
		"\t\tinventory\t -> orders:\tlatency "+one("94.000 us")+"\n",
		"Ping\n\tIncoming to handle times:\n",
		"\t\tinventory\t -> orders:\tlatency "+one("50.000 us")+"\n")
}
