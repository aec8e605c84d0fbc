// Command load drives the socket API with WebSocket clients, the way a page full of
// users would: clients connect at a fixed rate, each joins a topic, makes a few
// list_items requests, then stays connected and idle until the run ends.
//
// It is bounded in clients, rate and time, and stops by itself. Every second it
// prints one JSON line of cumulative counts to stdout, and one final line with
// "done": true (the protocol, flags, bounds and pacer are leaklab.dev/loadkit's).
// Before it disconnects its clients it can save the service's process table
// (-top-out) and run the node-wide GC experiment (-gc-out), because both only mean
// something while the clients are still connected. Interrupted, it exits 1.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"leaklab.dev/loadkit"
)

func main() {
	os.Exit(loadkit.Main(os.Args[1:], os.Stdout, os.Stderr, parseFlags, generate))
}

// stats holds the cumulative counts the generator reports; every client updates them.
type stats struct {
	connected *loadkit.Counter // handshakes that succeeded
	joined    *loadkit.Counter
	sent      *loadkit.Counter // list_items requests written
	ok        *loadkit.Counter // replies with status ok and the asked number of items
	errors    *loadkit.Counter // failed connects, error replies, timeouts, bad replies
	bytes     *loadkit.Counter // reply bytes received
	open      *loadkit.Counter // sockets open now (a level, in the final line too)
}

func newStats(s *loadkit.Stats) *stats {
	st := &stats{
		connected: s.Counter("connected"),
		joined:    s.Counter("joined"),
		sent:      s.Counter("sent"),
		ok:        s.Counter("ok"),
		errors:    s.Counter("errors"),
		bytes:     s.Counter("reply_bytes"),
	}
	st.open = &loadkit.Counter{}
	s.Func("open", st.open.Load)
	return st
}

// generate connects clients until the duration or the client budget is used up,
// keeps them connected to the end of the duration, takes the snapshots, then
// disconnects them and prints the final line; interrupted, it says so.
func generate(ctx context.Context, cfg config, out, errOut io.Writer) error {
	var counters loadkit.Stats
	st := newStats(&counters)
	hold, release := context.WithCancel(ctx) // clients stay connected until release
	defer release()

	var clients loadkit.Gate
	rep := loadkit.NewReport(out, &counters)
	cfg.pace.Run(ctx, rep, func(n int64) {
		clients.Go(func() { runClient(ctx, hold, cfg, int(n), st) })
	})

	// Snapshots first, while every client is still connected.
	var snapErr error
	if cfg.topOut != "" {
		snapErr = errors.Join(snapErr, saveGet(ctx, fmt.Sprintf("%s/debug/processes?top=%d", cfg.url, cfg.top), cfg.topOut))
	}
	if cfg.gcOut != "" {
		snapErr = errors.Join(snapErr, savePost(ctx, cfg.url+"/debug/gc", cfg.gcOut))
	}
	if snapErr != nil {
		fmt.Fprintf(errOut, "load: snapshot: %v\n", snapErr)
	}

	release()
	// A client stuck on a dead socket must not keep the run going.
	clients.Wait(context.Background(), 10*time.Second, nil)
	return cmp.Or(rep.Final(), ctx.Err())
}
