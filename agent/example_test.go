package agent_test

import (
	"log"

	"github.com/flightrec/flightrec/agent"
)

// A program opts in to `flightrec ctl` with one line in main; the deferred
// Close writes the recordings to dump on exit and removes the socket.
func ExampleListen() {
	if err := agent.Listen(agent.Options{}); err != nil {
		log.Print(err)
	}
	defer agent.Close()
	// ... the program ...
}
