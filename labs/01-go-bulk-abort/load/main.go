// Command load is an open-loop load generator for the check-in service.
//
// It starts requests at a fixed rate whether or not earlier ones have
// finished, as a fleet of agents would, and gives up on each one after a
// client-side timeout by closing its connection. An agent whose check-in failed
// may check in again after a backoff (-retries), as Elastic Agent does, until
// its retries or the load's duration run out. Every second it prints one
// JSON line of cumulative counts to stdout, and one final line at the end
// (the protocol, flags, bounds and pacer are leaklab.dev/loadkit's).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"leaklab.dev/loadkit"
)

// bodyVariants is how many distinct agent ids the generator cycles through.
const bodyVariants = 64

func main() {
	os.Exit(loadkit.Main(os.Args[1:], os.Stdout, os.Stderr, parseFlags, generate))
}

// generator sends the requests of one run.
type generator struct {
	cfg    config
	client *http.Client
	bodies [][]byte
	req    *loadkit.Requests
	// retries counts check-ins sent again after a failure; backingOff is how
	// many agents are waiting out a backoff now; stop ends every backoff once
	// the load's duration is over (no retry starts after it), even when
	// -max-requests ended the first check-ins earlier.
	retries    *loadkit.Counter
	backingOff atomic.Int64
	stop       <-chan struct{}
}

// generate runs the load until the duration or request budget is used up or
// ctx ends, then waits briefly for requests still in flight and prints the
// final line with the latency percentiles.
func generate(ctx context.Context, cfg config, out, _ io.Writer) error {
	gate := &loadkit.Gate{Limit: cfg.pace.Concurrency}
	tr := gate.Transport()
	if gate.Limit == 0 {
		// No cap: keep as many idle connections as the kit's largest cap would,
		// rather than net/http's 2 per host, so the storm does not measure handshakes.
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = maxConcurrency, maxConcurrency
	}
	defer tr.CloseIdleConnections()
	var st loadkit.Stats
	g := &generator{
		cfg:    cfg,
		client: &http.Client{Transport: tr},
		bodies: makeBodies(cfg.payloadBytes),
		req:    st.Requests(),
	}
	g.retries = st.Counter("retries")
	st.Gauge("inflight", gate.Inflight)
	st.Gauge("backing_off", g.backingOff.Load)

	rep := loadkit.NewReport(out, &st)
	retrying, stop := context.WithTimeout(ctx, cfg.pace.Duration)
	defer stop()
	g.stop = retrying.Done()
	cfg.pace.Run(ctx, rep, func(n int64) {
		g.req.Start(gate, func() { g.agent(n) })
	})
	// Not cut short by a signal: the requests in flight end by their own timeouts,
	// and the agents backing off stop at the end of the duration (or the signal).
	left := max(cfg.pace.Duration-rep.Elapsed(), 0)
	gate.Wait(context.Background(), left+max(cfg.timeout, cfg.impatientAfter)+time.Second, nil)
	lat := g.req.Latency()
	return rep.Final(loadkit.Field{Key: "p50_ms", Value: lat.P50}, loadkit.Field{Key: "p99_ms", Value: lat.P99})
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

// agent is agent n: it checks in, and after a failed check-in it checks in
// again after its backoff, at most cfg.retries times and never once the load's
// duration is over. Its goroutine counts as in flight while it backs off.
func (g *generator) agent(n int64) {
	body, timeout := g.bodies[n%int64(len(g.bodies))], g.timeoutOf(n)
	if g.send(body, timeout) || g.cfg.retries == 0 {
		return
	}
	r := agentRand(n)
	for k := 1; k <= g.cfg.retries; k++ {
		if !g.backOff(g.cfg.backoff.wait(k, r)) {
			return
		}
		g.retries.Add(1)
		if g.send(body, timeout) {
			return
		}
	}
}

// backOff waits d, and reports false if the load's duration ended first.
func (g *generator) backOff(d time.Duration) bool {
	g.backingOff.Add(1)
	defer g.backingOff.Add(-1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-g.stop:
		return false
	}
}

// send performs one check-in, records how it ended and reports whether it was
// answered.
func (g *generator) send(body []byte, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.cfg.target, bytes.NewReader(body))
	if err != nil {
		g.req.Errors.Add(1)
		return false
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
		g.req.Aborted.Add(1)
	case err != nil:
		g.req.Errors.Add(1)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		g.req.Errors.Add(1)
	default:
		g.req.RecordOK(time.Since(begin))
		return true
	}
	return false
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
