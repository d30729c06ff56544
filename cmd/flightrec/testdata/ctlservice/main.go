// Command ctlservice is the service the ctl tests control: it opts in with
// agent.Listen and emits app.Tick events (about 1000 a second, each 0 to
// 2 ms long) until stdin closes, SIGTERM or SIGINT.
package main

import (
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/flightrec/flightrec/agent"
	"github.com/flightrec/flightrec/event"
	"github.com/flightrec/flightrec/recorder"
)

type tick struct {
	event.Timed
	Seq  int64  `label:"Sequence"`
	Path string `label:"Path"`
}

var tickEvent = event.Define[tick](event.Info{Name: "app.Tick", Label: "Tick", Category: []string{"App"}})

func main() {
	if err := agent.Listen(agent.Options{DumpOnExit: os.Getenv("CTLSERVICE_DUMPONEXIT") != ""}); err != nil {
		log.Fatal(err)
	}
	if f := os.Getenv("CTLSERVICE_OWN"); f != "" {
		// A recording the program starts itself, as programs do.
		if _, err := recorder.Start(recorder.WithName("own"), recorder.WithFile(f)); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("ready")
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	for seq := int64(0); ; seq++ {
		select {
		case <-done:
			agent.Close()
			return
		default:
		}
		var ev tick
		tickEvent.Begin(&ev)
		time.Sleep(time.Duration(seq%3) * 500 * time.Microsecond)
		ev.Seq, ev.Path = seq, "/tick"
		ev.Commit()
	}
}
