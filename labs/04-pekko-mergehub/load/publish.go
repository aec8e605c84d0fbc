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
	"time"

	"leaklab.dev/loadkit"
)

// publisher sends the skaters' location updates at a fixed open-loop rate: an
// update starts when it is due, whether or not earlier ones have finished.
type publisher struct {
	cfg    config
	client *http.Client
	stats  *stats
}

// location is what a skater sends; the service validates every field.
type location struct {
	Skater    string  `json:"skater"`
	Lat       float64 `json:"lat"`
	Lon       float64 `json:"lon"`
	Timestamp int64   `json:"timestamp"`
}

// run publishes until the duration is used up or ctx ends, a progress line a
// second, then waits a bounded time for updates still in flight.
func (p *publisher) run(ctx context.Context, rep *loadkit.Report) {
	gate := &loadkit.Gate{Limit: p.cfg.pace.Concurrency}
	p.cfg.pace.Run(ctx, rep, func(n int64) {
		p.stats.req.Start(gate, func() { p.send(n) })
	})
	// Not cut short by a signal: an update in flight ends by its own timeout.
	gate.Wait(context.Background(), p.cfg.timeout+time.Second, nil)
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
		p.stats.req.Errors.Add(1)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.timeout)
	defer cancel()
	url := fmt.Sprintf("%s/events/%s/locations", p.cfg.base, event)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		p.stats.req.Errors.Add(1)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			p.stats.req.Aborted.Add(1)
		} else {
			p.stats.req.Errors.Add(1)
		}
		return
	}
	defer resp.Body.Close()
	// 202 is accepted; a 503 whose reason says the location was dropped (the
	// service chose not to take it) is counted apart from other failures.
	var answer struct {
		Error string `json:"error"`
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch {
	case err == nil && resp.StatusCode == http.StatusAccepted:
		p.stats.req.OK.Add(1)
		p.stats.accepted.Add(1)
	case err == nil && resp.StatusCode == http.StatusServiceUnavailable &&
		json.Unmarshal(raw, &answer) == nil && strings.Contains(answer.Error, "dropped"):
		p.stats.req.OK.Add(1) // answered: the service chose to drop it
		p.stats.dropped.Add(1)
	default:
		p.stats.req.Errors.Add(1)
	}
}
