package loadkit

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// SignalGrace is the most a [Gate.Wait] that sees its context end goes on waiting:
// a stop asked for by a signal is prompt.
const SignalGrace = time.Second

// Gate runs a load's work in goroutines, counts what is in flight and waits for it
// with a bound. Limit caps what is in flight for [Requests.Start]; 0 is no cap.
type Gate struct {
	Limit    int
	inflight atomic.Int64
	wg       sync.WaitGroup
}

// Go runs f in its own goroutine.
func (g *Gate) Go(f func()) {
	g.inflight.Add(1)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer g.inflight.Add(-1)
		f()
	}()
}

// Full reports whether Limit goroutines are running.
func (g *Gate) Full() bool {
	return g.Limit > 0 && g.inflight.Load() >= int64(g.Limit)
}

// Inflight is how many goroutines are running now (a gauge).
func (g *Gate) Inflight() int64 { return g.inflight.Load() }

// Wait waits for the goroutines, at most grace, and reports whether all returned;
// those still running are left to their own timeouts. If ctx ends meanwhile, it
// waits at most SignalGrace more. every, unless nil, is called once a second (a
// progress line while requests drain).
func (g *Gate) Wait(ctx context.Context, grace time.Duration, every func()) bool {
	done := make(chan struct{})
	go func() {
		g.wg.Wait()
		close(done)
	}()
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	var tick <-chan time.Time
	if every != nil {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	stopAsked := ctx.Done()
	for {
		select {
		case <-done:
			return true
		case <-deadline.C:
			return false
		case <-stopAsked:
			stopAsked = nil
			deadline.Reset(SignalGrace)
		case <-tick:
			every()
		}
	}
}

// Transport keeps up to Limit idle connections to the service, one per request that
// may be in flight, so an open loop at its cap does not open and close connections
// (which would measure the handshakes); compression is off, as the service's own
// bytes are what a lab measures.
func (g *Gate) Transport() *http.Transport {
	return &http.Transport{
		MaxIdleConns:        g.Limit,
		MaxIdleConnsPerHost: g.Limit,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
}
