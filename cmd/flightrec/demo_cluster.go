package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	aflow "github.com/flightrec/flightrec/analysis/flow"
	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/flow"
	"github.com/flightrec/flightrec/internal/cli"
	"github.com/flightrec/flightrec/recorder"
)

// The 3-node cluster demo: the parent process listens on three loopback
// ports and starts one child process per node (so that each node has its
// own recording), handing it its listener as file descriptor 3. Each node
// sends a bounded number of requests (to one peer, or a fan-out to all)
// over length-framed TCP; a reader goroutine per connection hands every
// received message to a pool of workers; a receiver drops every fifth
// request the first time it arrives and the sender retransmits it.

var clusterNodes = []string{"A", "B", "C"}

const (
	msgRequest  = 'Q'
	msgResponse = 'R'
	retransmit  = 150 * time.Millisecond
)

// runCluster runs the cluster, merges node-A.jfr, node-B.jfr, node-C.jfr
// and prints a few traces and the statistics.
func runCluster(ctx context.Context, env *cli.Env, requests int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var addrs []string
	var files []*os.File
	for range clusterNodes {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		f, err := l.(*net.TCPListener).File()
		l.Close()
		if err != nil {
			return err
		}
		defer f.Close()
		addrs, files = append(addrs, l.Addr().String()), append(files, f)
	}
	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Reader
	}
	var children []child
	for i := range clusterNodes {
		cmd := exec.CommandContext(ctx, exe, "demo", "--node", strconv.Itoa(i), "--peers", strings.Join(addrs, ","),
			"--requests", strconv.Itoa(requests))
		cmd.Env = append(os.Environ(), "FLIGHTREC_DEMO_NODE=1")
		cmd.ExtraFiles = []*os.File{files[i]}
		cmd.Stderr = env.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		defer cmd.Wait() //nolint:errcheck // waited below; this reaps on early return
		children = append(children, child{cmd, in, bufio.NewReader(out)})
	}
	// A node serves its peers until all nodes are done sending.
	for i, c := range children {
		line, err := c.out.ReadString('\n')
		if err != nil {
			return fmt.Errorf("node %s: %w", clusterNodes[i], err)
		}
		fmt.Fprintf(env.Stdout, "node %s: %s", clusterNodes[i], line)
	}
	for _, c := range children {
		c.stdin.Close()
	}
	for i, c := range children {
		io.Copy(io.Discard, c.out) //nolint:errcheck
		if err := c.cmd.Wait(); err != nil {
			return fmt.Errorf("node %s: %w", clusterNodes[i], err)
		}
	}
	var inputs []aflow.Input
	for _, n := range clusterNodes {
		inputs = append(inputs, aflow.FileInput("node-"+n+".jfr"))
	}
	stats := aflow.NewStats()
	shown := 0
	m, err := aflow.Merge(inputs, nil, func(t *aflow.Trace) error {
		stats.Add(t)
		if shown < 3 && len(t.Events) > 8 {
			shown++
			fmt.Fprintln(env.Stdout)
			return aflow.WriteTrace(env.Stdout, t)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "\n%d traces, %d spans, %d events from node-A.jfr node-B.jfr node-C.jfr\n\n", m.TracesOut, m.Spans, m.Events)
	if err := stats.WriteText(env.Stdout, aflow.Reports{Messages: true, Traces: true}); err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, "\nMerge them again with: flightrec flow traces node-A.jfr node-B.jfr node-C.jfr (or flow stats)")
	return nil
}

// clusterNode is one node of the cluster, in its own process.
type clusterNode struct {
	idx     int
	node    *flow.Node
	peers   []string
	jobs    chan clusterJob
	mu      sync.Mutex
	conns   map[int]*clusterConn
	waiting map[flow.ID]chan struct{}
	seen    map[flow.ID]bool // requests received once, for the injected loss
}

type clusterConn struct {
	mu sync.Mutex
	c  net.Conn
}

func (c *clusterConn) write(id flow.ID, payload []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return flow.WriteFrame(c.c, id, payload)
}

type clusterJob struct {
	tok     flow.Token
	id      flow.ID
	payload []byte
	conn    *clusterConn
}

// runClusterNode is the child process of node idx.
func runClusterNode(ctx context.Context, env *cli.Env, idx int, peers []string, requests int) error {
	if idx < 0 || idx >= len(clusterNodes) || len(peers) != len(clusterNodes) {
		return cli.Usagef("bad --node or --peers")
	}
	l, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		return err
	}
	name := clusterNodes[idx]
	rec, err := recorder.Start(recorder.WithName("flightrec demo node "+name), recorder.WithFile("node-"+name+".jfr"))
	if err != nil {
		return err
	}
	n := &clusterNode{idx: idx, node: flow.NewNode(uint16(idx+1), name), peers: peers,
		jobs: make(chan clusterJob, 256), conns: map[int]*clusterConn{},
		waiting: map[flow.ID]chan struct{}{}, seen: map[flow.ID]bool{}}
	n.node.Announce()
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			event.SetGoroutineName(fmt.Sprintf("%s-worker-%d", name, w))
			defer event.SetGoroutineName("")
			for j := range n.jobs {
				n.work(j)
			}
		}()
	}
	var readers sync.WaitGroup
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			readers.Add(1)
			go func() { defer readers.Done(); n.read(&clusterConn{c: c}) }()
		}
	}()
	done, sent, lost := n.client(ctx, requests, &readers)
	// --requests counts requests; a fan-out sends a message to each peer.
	fmt.Fprintf(env.Stdout, "%d requests, %d messages sent (a fan-out to both peers), %d retransmitted\n", done, sent, lost)
	io.Copy(io.Discard, os.Stdin) //nolint:errcheck // EOF: every node is done
	l.Close()
	n.mu.Lock()
	for _, c := range n.conns {
		c.c.Close()
	}
	n.mu.Unlock()
	readers.Wait()
	close(n.jobs)
	wg.Wait()
	return rec.Stop()
}

// read receives the frames of one connection and hands them to the pool.
func (n *clusterNode) read(c *clusterConn) {
	event.SetGoroutineName(clusterNodes[n.idx] + "-reader")
	defer event.SetGoroutineName("")
	defer c.c.Close()
	for {
		id, payload, err := flow.ReadFrame(c.c, nil)
		if err != nil {
			return
		}
		sp := n.node.Received().Message(id)
		if len(payload) > 0 && payload[0] == msgRequest && id.Counter()%5 == 0 {
			n.mu.Lock()
			first := !n.seen[id]
			n.seen[id] = true
			n.mu.Unlock()
			if first {
				sp.Discard() // injected loss: the sender retransmits
				sp.End()
				continue
			}
		}
		tok := sp.Handoff()
		sp.End()
		select {
		case n.jobs <- clusterJob{tok, id, payload, c}:
		default:
			tok.Reject()
		}
	}
}

// work handles one message on a pool goroutine.
func (n *clusterNode) work(j clusterJob) {
	sp := j.tok.Take()
	defer j.tok.Complete()
	sp.HandleStart()
	defer sp.HandleEnd()
	if len(j.payload) == 0 {
		return
	}
	switch j.payload[0] {
	case msgRequest:
		sp.MessageTag("Request")
		time.Sleep(200 * time.Microsecond) // the work
		rid := n.node.NextID()
		resp := binary.BigEndian.AppendUint64([]byte{msgResponse}, uint64(j.id))
		sp.SendStarted(rid)
		j.conn.write(rid, resp) //nolint:errcheck // a lost response is retransmitted by its request
		sp.SendWritten(rid)
	case msgResponse:
		sp.MessageTag("Response")
		if len(j.payload) == 9 {
			req := flow.ID(binary.BigEndian.Uint64(j.payload[1:]))
			n.mu.Lock()
			if ch := n.waiting[req]; ch != nil {
				close(ch)
				delete(n.waiting, req)
			}
			n.mu.Unlock()
		}
	}
}

func (n *clusterNode) conn(peer int, readers *sync.WaitGroup) (*clusterConn, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c := n.conns[peer]; c != nil {
		return c, nil
	}
	c, err := net.Dial("tcp", n.peers[peer])
	if err != nil {
		return nil, err
	}
	cc := &clusterConn{c: c}
	n.conns[peer] = cc
	readers.Add(1)
	go func() { defer readers.Done(); n.read(cc) }()
	return cc, nil
}

// client sends the node's requests: every third one a fan-out to all
// peers, the others to one peer; it waits for the responses and
// retransmits a request that got none.
func (n *clusterNode) client(ctx context.Context, requests int, readers *sync.WaitGroup) (done, sent, retransmitted int) {
	event.SetGoroutineName(clusterNodes[n.idx] + "-client")
	defer event.SetGoroutineName("")
	for r := range requests {
		if ctx.Err() != nil {
			break
		}
		done++
		var targets []int
		tag := "GET"
		if r%3 == 0 {
			tag = "FANOUT"
			for p := range n.peers {
				if p != n.idx {
					targets = append(targets, p)
				}
			}
		} else {
			targets = []int{(n.idx + 1 + r%2) % len(n.peers)}
		}
		sp := n.node.Begin()
		sp.TraceTag(tag)
		type call struct {
			id   flow.ID
			c    *clusterConn
			done chan struct{}
		}
		var calls []call
		for _, p := range targets {
			c, err := n.conn(p, readers)
			if err != nil {
				continue
			}
			id := n.node.NextID()
			done := make(chan struct{})
			n.mu.Lock()
			n.waiting[id] = done
			n.mu.Unlock()
			sp.SendStarted(id)
			if c.write(id, []byte{msgRequest}) == nil {
				sent++
			}
			sp.SendWritten(id)
			calls = append(calls, call{id, c, done})
		}
		sp.End()
		for _, cl := range calls {
			for attempt := 0; attempt < 5; attempt++ {
				select {
				case <-cl.done:
				case <-time.After(retransmit):
					nc := n.node.BeginNonCausal()
					nc.NonCausalSend(cl.id)
					cl.c.write(cl.id, []byte{msgRequest}) //nolint:errcheck
					nc.End()
					retransmitted++
					continue
				case <-ctx.Done():
				}
				break
			}
		}
	}
	return done, sent, retransmitted
}
