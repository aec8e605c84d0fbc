// Command load is an open-loop load generator for the check-in service.
//
// It starts requests at a fixed rate whether or not earlier ones have
// finished, as a fleet of agents would, and gives up on each one after a
// client-side timeout by closing its connection. Every second it prints one
// JSON line of cumulative counts to stdout, and one final line at the end.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

// tick is how often the scheduler catches up with the rate. Requests due
// within a tick are started together.
const tick = 5 * time.Millisecond

// bodyVariants is how many distinct agent ids the generator cycles through.
const bodyVariants = 64

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
	generate(ctx, cfg, stdout)
	return 0
}

// generator sends the requests of one run.
type generator struct {
	cfg    config
	client *http.Client
	bodies [][]byte
	stats  stats
	wg     sync.WaitGroup
}

// generate runs the load until the duration or request budget is used up or
// ctx ends, then waits briefly for requests still in flight and prints the
// final line.
func generate(ctx context.Context, cfg config, out io.Writer) {
	tr := &http.Transport{
		MaxIdleConns:        cfg.concurrency,
		MaxIdleConnsPerHost: cfg.concurrency,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	g := &generator{
		cfg:    cfg,
		client: &http.Client{Transport: tr},
		bodies: makeBodies(cfg.payloadBytes),
	}
	enc := json.NewEncoder(out)

	start := time.Now()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	report := time.NewTicker(time.Second)
	defer report.Stop()

	var issued int64
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-report.C:
			_ = enc.Encode(g.stats.progress(time.Since(start)))
		case now := <-ticker.C:
			elapsed := now.Sub(start)
			if elapsed > cfg.duration {
				elapsed = cfg.duration
			}
			due := min(int64(elapsed.Seconds()*float64(cfg.rate)), cfg.maxRequests)
			for ; issued < due; issued++ {
				g.start(issued)
			}
			if issued >= cfg.maxRequests || elapsed >= cfg.duration {
				break loop
			}
		}
	}

	g.waitInflight(max(cfg.timeout, cfg.impatientAfter) + time.Second)
	_ = enc.Encode(g.stats.final(time.Since(start)))
}

// start sends request n in its own goroutine, or counts it as skipped when
// the in-flight cap is reached. It never queues: a late request is a lost
// request, as in an open-loop fleet.
func (g *generator) start(n int64) {
	if g.stats.inflight.Load() >= int64(g.cfg.concurrency) {
		g.stats.skipped.Add(1)
		return
	}
	g.stats.inflight.Add(1)
	g.stats.sent.Add(1)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer g.stats.inflight.Add(-1)
		g.send(g.bodies[n%int64(len(g.bodies))], g.timeoutOf(n))
	}()
}

// timeoutOf spreads the impatient share evenly over the requests: request n
// is impatient when n*share crosses an integer, so every run gets the same
// mix in the same order.
func (g *generator) timeoutOf(n int64) time.Duration {
	share := g.cfg.impatient
	if math.Floor(float64(n+1)*share) > math.Floor(float64(n)*share) {
		return g.cfg.impatientAfter
	}
	return g.cfg.timeout
}

// send performs one check-in and records how it ended.
func (g *generator) send(body []byte, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.cfg.target, bytes.NewReader(body))
	if err != nil {
		g.stats.errors.Add(1)
		return
	}
	req.Header.Set("Content-Type", "application/json")

	begin := time.Now()
	resp, err := g.client.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		g.stats.aborted.Add(1)
	case err != nil:
		g.stats.errors.Add(1)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		g.stats.errors.Add(1)
	default:
		g.stats.recordOK(time.Since(begin))
	}
}

// waitInflight waits for in-flight requests, at most d. Requests still
// running after that are left to their own timeouts.
func (g *generator) waitInflight(d time.Duration) {
	done := make(chan struct{})
	go func() {
		g.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// makeBodies builds the request bodies once, so that sending costs no
// encoding.
func makeBodies(payloadBytes int) [][]byte {
	payload := strings.Repeat("x", payloadBytes)
	bodies := make([][]byte, bodyVariants)
	for i := range bodies {
		b, err := json.Marshal(map[string]string{
			"agent_id": fmt.Sprintf("load-agent-%03d", i),
			"status":   "online",
			"payload":  payload,
		})
		if err != nil {
			panic(err) // strings always marshal
		}
		bodies[i] = b
	}
	return bodies
}
