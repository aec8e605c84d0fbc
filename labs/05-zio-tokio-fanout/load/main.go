// Command load drives the lab 05 replay services (ZIO broken, its fixes, and the
// Tokio rewrite) with the same open-loop mix of replay requests.
//
// It starts GET /replay requests at a fixed rate whether or not earlier ones
// have finished, as players opening replays would, reads every streamed
// response to its end and records how long that took. It stops at -duration or
// after -max-requests, whichever comes first, or on SIGINT/SIGTERM. Every
// second it prints one JSON line of cumulative counts to stdout; the last line
// has "done": true and the latency percentiles.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// tick is how often the scheduler catches up with the rate; requests due
// within one tick start together.
const tick = 5 * time.Millisecond

// stopGrace is how long requests in flight may finish after a signal before
// they are cancelled.
const stopGrace = time.Second

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
	stats  stats
	wg     sync.WaitGroup
	reqCtx context.Context // cancelled to abandon whatever is still in flight
}

// generate runs the load until the duration or the request budget is used up
// or ctx ends, lets the requests in flight finish (at most their timeout, or
// stopGrace after a signal), and prints the final line.
func generate(ctx context.Context, cfg config, out io.Writer) finalLine {
	tr := &http.Transport{
		MaxIdleConns:        cfg.concurrency,
		MaxIdleConnsPerHost: cfg.concurrency,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	defer tr.CloseIdleConnections()
	reqCtx, cancelReqs := context.WithCancel(context.Background())
	defer cancelReqs()
	g := &generator{cfg: cfg, client: &http.Client{Transport: tr}, reqCtx: reqCtx}
	enc := json.NewEncoder(out)

	start := time.Now()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	report := time.NewTicker(time.Second)
	defer report.Stop()

	var issued int64
	stopped := ""
	for stopped == "" {
		select {
		case <-ctx.Done():
			stopped = "signal"
		case <-report.C:
			_ = enc.Encode(g.stats.progress(time.Since(start)))
		case now := <-ticker.C:
			elapsed := min(now.Sub(start), cfg.duration)
			due := min(int64(elapsed.Seconds()*float64(cfg.rate)), cfg.maxRequests)
			for ; issued < due; issued++ {
				g.start(issued)
			}
			switch {
			case elapsed >= cfg.duration:
				stopped = "duration"
			case issued >= cfg.maxRequests:
				stopped = "max-requests"
			}
		}
	}

	grace := cfg.timeout
	if stopped == "signal" {
		grace = stopGrace
	}
	g.waitInflight(ctx, grace, report.C, enc, start)
	cancelReqs()
	g.wg.Wait()
	final := g.stats.final(time.Since(start), stopped)
	_ = enc.Encode(final)
	return final
}

// waitInflight waits for the requests in flight, at most grace (cut short by
// a signal), still printing a progress line a second.
func (g *generator) waitInflight(ctx context.Context, grace time.Duration, report <-chan time.Time, enc *json.Encoder, start time.Time) {
	done := make(chan struct{})
	go func() {
		g.wg.Wait()
		close(done)
	}()
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	sig := ctx.Done()
	for {
		select {
		case <-done:
			return
		case <-deadline.C:
			return
		case <-sig:
			// A signal while draining: give what is left stopGrace at most.
			sig = nil
			deadline.Reset(stopGrace)
		case <-report:
			_ = enc.Encode(g.stats.progress(time.Since(start)))
		}
	}
}

// start sends request n in its own goroutine, or counts it as skipped when
// the in-flight cap is reached. It never queues: in an open loop a late
// request is a lost request.
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
		g.send(g.target(n))
	}()
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
		g.stats.errors.Add(1)
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
		g.stats.aborted.Add(1)
	case err != nil, resp.StatusCode != http.StatusOK, lines != int64(g.cfg.count):
		g.stats.errors.Add(1)
	default:
		g.stats.recordOK(time.Since(begin), lines)
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
