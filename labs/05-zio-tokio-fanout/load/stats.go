package main

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// stats holds the cumulative counts of a run. The counters are atomic because
// every request goroutine updates them.
type stats struct {
	sent     atomic.Int64 // requests started
	ok       atomic.Int64 // 200 with exactly the events asked for
	errors   atomic.Int64 // refused, non-200, short or malformed body
	aborted  atomic.Int64 // gave up: client timeout or stopped by a signal
	skipped  atomic.Int64 // due while the in-flight cap was reached, never sent
	inflight atomic.Int64
	events   atomic.Int64 // event lines received in complete, successful replays

	mu        sync.Mutex
	latencies []float64 // ms from sending to the last byte, successful requests only
}

// progressLine is printed once a second: cumulative counts since the start.
type progressLine struct {
	T        float64 `json:"t_s"`
	Sent     int64   `json:"sent"`
	OK       int64   `json:"ok"`
	Errors   int64   `json:"errors"`
	Aborted  int64   `json:"aborted"`
	Skipped  int64   `json:"skipped"`
	Inflight int64   `json:"inflight"`
	Events   int64   `json:"events"`
}

// finalLine is printed once, last, with "done": true.
type finalLine struct {
	Done    bool    `json:"done"`
	T       float64 `json:"t_s"`
	Sent    int64   `json:"sent"`
	OK      int64   `json:"ok"`
	Errors  int64   `json:"errors"`
	Aborted int64   `json:"aborted"`
	Skipped int64   `json:"skipped"`
	Events  int64   `json:"events"`
	P50     float64 `json:"p50_ms"`
	P99     float64 `json:"p99_ms"`
	Max     float64 `json:"max_ms"`
	Stopped string  `json:"stopped"` // "duration", "max-requests" or "signal"
}

func (s *stats) recordOK(d time.Duration, events int64) {
	s.ok.Add(1)
	s.events.Add(events)
	s.mu.Lock()
	s.latencies = append(s.latencies, float64(d)/float64(time.Millisecond))
	s.mu.Unlock()
}

func (s *stats) progress(elapsed time.Duration) progressLine {
	return progressLine{
		T:        round3(elapsed.Seconds()),
		Sent:     s.sent.Load(),
		OK:       s.ok.Load(),
		Errors:   s.errors.Load(),
		Aborted:  s.aborted.Load(),
		Skipped:  s.skipped.Load(),
		Inflight: s.inflight.Load(),
		Events:   s.events.Load(),
	}
}

func (s *stats) final(elapsed time.Duration, stopped string) finalLine {
	s.mu.Lock()
	lat := slices.Clone(s.latencies)
	s.mu.Unlock()
	slices.Sort(lat)
	var top float64
	if len(lat) > 0 {
		top = lat[len(lat)-1]
	}
	return finalLine{
		Done:    true,
		T:       round3(elapsed.Seconds()),
		Sent:    s.sent.Load(),
		OK:      s.ok.Load(),
		Errors:  s.errors.Load(),
		Aborted: s.aborted.Load(),
		Skipped: s.skipped.Load(),
		Events:  s.events.Load(),
		P50:     round3(percentile(lat, 50)),
		P99:     round3(percentile(lat, 99)),
		Max:     round3(top),
		Stopped: stopped,
	}
}

// percentile is the nearest-rank p-th percentile of an ascending slice: the
// smallest value with at least p% of the values at or below it. It is 0 for
// an empty slice.
func percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
