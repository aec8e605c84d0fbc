// Command load drives the lab 05 replay services (ZIO broken, its fixes, and the
// Tokio rewrite) with the same open-loop mix of replay requests.
//
// It starts GET /replay requests at a fixed rate whether or not earlier ones
// have finished, as players opening replays would, reads every streamed
// response to its end and records how long that took. It stops at -duration or
// after -max-requests, whichever comes first, or on SIGINT/SIGTERM. Every
// second it prints one JSON line of cumulative counts to stdout; the last line
// has "done": true and the latency percentiles (the protocol, flags, bounds and
// pacer are leaklab.dev/loadkit's).
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"leaklab.dev/loadkit"
)

func main() {
	os.Exit(loadkit.Main(os.Args[1:], os.Stdout, os.Stderr, parseFlags, generate))
}

// generator sends the requests of one run.
type generator struct {
	cfg    config
	client *http.Client
	req    *loadkit.Requests
	events *loadkit.Counter // event lines received in complete, successful replays
	reqCtx context.Context  // cancelled to abandon whatever is still in flight
}

// generate runs the load until the duration or the request budget is used up
// or ctx ends, lets the requests in flight finish (at most their timeout, or
// loadkit.SignalGrace after a signal) with a progress line a second, abandons
// the rest and prints the final line.
func generate(ctx context.Context, cfg config, out, _ io.Writer) error {
	gate := &loadkit.Gate{Limit: cfg.pace.Concurrency}
	tr := gate.Transport()
	defer tr.CloseIdleConnections()
	reqCtx, cancelReqs := context.WithCancel(context.Background())
	defer cancelReqs()
	var st loadkit.Stats
	g := &generator{cfg: cfg, client: &http.Client{Transport: tr}, req: st.Requests(), reqCtx: reqCtx}
	st.Gauge("inflight", gate.Inflight)
	g.events = st.Counter("events")

	rep := loadkit.NewReport(out, &st)
	stopped := cfg.pace.Run(ctx, rep, func(n int64) {
		g.req.Start(gate, func() { g.send(g.target(n)) })
	})
	grace := cfg.timeout
	if stopped == loadkit.StopSignal {
		grace = loadkit.SignalGrace
	}
	gate.Wait(ctx, grace, rep.Progress)
	cancelReqs()
	// Cancelled, the rest return at once and count as aborted.
	gate.Wait(context.Background(), cfg.timeout, nil)
	lat := g.req.Latency()
	return rep.Final(
		loadkit.Field{Key: "p50_ms", Value: lat.P50},
		loadkit.Field{Key: "p99_ms", Value: lat.P99},
		loadkit.Field{Key: "max_ms", Value: lat.Max},
		loadkit.Field{Key: "stopped", Value: stopped},
	)
}

// target is the URL of request n: a match and a start drawn from the seed
// and n alone, so a run with the same flags sends the same requests.
func (g *generator) target(n int64) string {
	r := splitmix(g.cfg.seed ^ uint64(n)*0x9e3779b97f4a7c15)
	match := r % uint64(g.cfg.matches)
	from := (r >> 24) % uint64(g.cfg.perMatch-g.cfg.count+1)
	return fmt.Sprintf("%s/replay?match=%d&from=%d&count=%d", g.cfg.base, match, from, g.cfg.count)
}

// send performs one replay, reads the whole body and records how it ended.
func (g *generator) send(target string) {
	ctx, cancel := context.WithTimeout(g.reqCtx, g.cfg.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		g.req.Errors.Add(1)
		return
	}
	begin := time.Now()
	resp, err := g.client.Do(req)
	var lines int64
	if err == nil {
		lines, err = countLines(resp.Body)
		resp.Body.Close()
	}
	switch {
	case err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)):
		g.req.Aborted.Add(1)
	case err != nil, resp.StatusCode != http.StatusOK, lines != int64(g.cfg.count):
		g.req.Errors.Add(1)
	default:
		g.req.RecordOK(time.Since(begin))
		g.events.Add(lines)
	}
}

// countLines reads r to the end and counts newline-terminated lines.
func countLines(r io.Reader) (int64, error) {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// splitmix is SplitMix64's finaliser, a cheap well-spread hash.
func splitmix(v uint64) uint64 {
	z := v + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
