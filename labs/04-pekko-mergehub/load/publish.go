package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// tick is how often the scheduler catches up with the rate; updates due within
// a tick are started together.
const tick = 5 * time.Millisecond

// publisher sends the skaters' location updates at a fixed open-loop rate: an
// update starts when it is due, whether or not earlier ones have finished.
type publisher struct {
	cfg    config
	client *http.Client
	stats  *stats
	wg     sync.WaitGroup
}

// location is what a skater sends; the service validates every field.
type location struct {
	Skater    string  `json:"skater"`
	Lat       float64 `json:"lat"`
	Lon       float64 `json:"lon"`
	Timestamp int64   `json:"timestamp"`
}

// run publishes until the duration is used up or ctx ends, calling report
// once a second, then waits a bounded time for updates still in flight.
func (p *publisher) run(ctx context.Context, start time.Time, report func()) {
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	every := time.NewTicker(time.Second)
	defer every.Stop()
	var issued int64
	for {
		select {
		case <-ctx.Done():
			p.wait(p.cfg.timeout + time.Second)
			return
		case <-every.C:
			report()
		case now := <-ticker.C:
			elapsed := min(now.Sub(start), p.cfg.duration)
			for due := int64(elapsed.Seconds() * p.cfg.rate); issued < due; issued++ {
				p.start(issued)
			}
			if elapsed >= p.cfg.duration {
				p.wait(p.cfg.timeout + time.Second)
				return
			}
		}
	}
}

// start sends update n in its own goroutine, or counts it as skipped when the
// in-flight cap is reached: a late update is a lost update, never a queued one.
func (p *publisher) start(n int64) {
	if p.stats.inflight.Load() >= int64(p.cfg.concurrency) {
		p.stats.skipped.Add(1)
		return
	}
	p.stats.inflight.Add(1)
	p.stats.sent.Add(1)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer p.stats.inflight.Add(-1)
		p.send(n)
	}()
}

// send publishes update n: skater n mod skaters, on that skater's event.
func (p *publisher) send(n int64) {
	skater := int(n % int64(p.cfg.skaters))
	event := p.cfg.events[skater%len(p.cfg.events)]
	body, err := json.Marshal(location{
		Skater:    fmt.Sprintf("skater-%03d", skater),
		Lat:       45.07 + float64(n%1000)*1e-5,
		Lon:       7.68 + float64(skater)*1e-4,
		Timestamp: time.Now().UnixMilli(),
	})
	if err != nil {
		p.stats.errors.Add(1)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.timeout)
	defer cancel()
	url := fmt.Sprintf("%s/events/%s/locations", p.cfg.base, event)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		p.stats.errors.Add(1)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			p.stats.timedOut.Add(1)
		} else {
			p.stats.errors.Add(1)
		}
		return
	}
	defer resp.Body.Close()
	// 202 is accepted; a 503 whose reason says the location was dropped (a full
	// queue) is counted apart from other failures.
	var answer struct {
		Error string `json:"error"`
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch {
	case err == nil && resp.StatusCode == http.StatusAccepted:
		p.stats.accepted.Add(1)
	case err == nil && resp.StatusCode == http.StatusServiceUnavailable &&
		json.Unmarshal(raw, &answer) == nil && strings.Contains(answer.Error, "dropped"):
		p.stats.dropped.Add(1)
	default:
		p.stats.errors.Add(1)
	}
}

// wait waits for in-flight updates, at most d; any left run to their timeouts.
func (p *publisher) wait(d time.Duration) {
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
