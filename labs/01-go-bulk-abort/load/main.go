// Command load is an open-loop load generator for the check-in service.
//
// It starts requests at a fixed rate whether or not earlier ones have
// finished, as a fleet of agents would, and gives up on each one after a
// client-side timeout by closing its connection. Every second it prints one
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
}

// generate runs the load until the duration or request budget is used up or
// ctx ends, then waits briefly for requests still in flight and prints the
// final line with the latency percentiles.
func generate(ctx context.Context, cfg config, out, _ io.Writer) error {
	gate := &loadkit.Gate{Limit: cfg.pace.Concurrency}
	tr := gate.Transport()
	defer tr.CloseIdleConnections()
	var st loadkit.Stats
	g := &generator{
		cfg:    cfg,
		client: &http.Client{Transport: tr},
		bodies: makeBodies(cfg.payloadBytes),
		req:    st.Requests(),
	}
	st.Gauge("inflight", gate.Inflight)

	rep := loadkit.NewReport(out, &st)
	cfg.pace.Run(ctx, rep, func(n int64) {
		g.req.Start(gate, func() { g.send(g.bodies[n%int64(len(g.bodies))], g.timeoutOf(n)) })
	})
	// Not cut short by a signal: the requests in flight end by their own timeouts.
	gate.Wait(context.Background(), max(cfg.timeout, cfg.impatientAfter)+time.Second, nil)
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

// send performs one check-in and records how it ended.
func (g *generator) send(body []byte, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.cfg.target, bytes.NewReader(body))
	if err != nil {
		g.req.Errors.Add(1)
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
		g.req.Aborted.Add(1)
	case err != nil:
		g.req.Errors.Add(1)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		g.req.Errors.Add(1)
	default:
		g.req.RecordOK(time.Since(begin))
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
