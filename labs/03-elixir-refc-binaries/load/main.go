// Command load drives the socket API with WebSocket clients, the way a page full of
// users would: clients connect at a fixed rate, each joins a topic, makes a few
// list_items requests, then stays connected and idle until the run ends.
//
// It is bounded in clients, rate and time, and stops by itself. Every second it
// prints one JSON line of cumulative counts to stdout, and one final line with
// "done": true. Before it disconnects its clients it can save the service's process
// table (-top-out) and run the node-wide GC experiment (-gc-out), because both only
// mean something while the clients are still connected.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// tick is how often the scheduler catches up with the connect rate.
const tick = 10 * time.Millisecond

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "load: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := generate(ctx, cfg, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "load: %v\n", err)
		return 1
	}
	return 0
}

// generate connects clients until the duration or the client budget is used up,
// keeps them connected to the end of the duration, takes the snapshots, then
// disconnects them and prints the final line.
func generate(ctx context.Context, cfg config, out, errOut io.Writer) error {
	var st stats
	enc := json.NewEncoder(out)
	hold, release := context.WithCancel(ctx) // clients stay connected until release
	defer release()

	start := time.Now()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	report := time.NewTicker(time.Second)
	defer report.Stop()
	deadline := time.NewTimer(cfg.duration)
	defer deadline.Stop()

	var wg sync.WaitGroup
	started := 0
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-deadline.C:
			break loop
		case <-report.C:
			_ = enc.Encode(st.progress(time.Since(start)))
		case now := <-ticker.C:
			due := min(int(now.Sub(start).Seconds()*cfg.rate), cfg.clients)
			for ; started < due; started++ {
				wg.Add(1)
				go func(n int) {
					defer wg.Done()
					runClient(ctx, hold, cfg, n, &st)
				}(started)
			}
		}
	}

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
	waitFor(&wg, 10*time.Second)
	_ = enc.Encode(st.final(time.Since(start)))
	return ctx.Err()
}

// waitFor waits for wg, or gives up after d (a client stuck on a dead socket must
// not keep the run going).
func waitFor(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
	}
}
