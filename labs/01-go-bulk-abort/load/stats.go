package main

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// stats holds the cumulative counts the generator reports. Counters are
// atomic because every request goroutine updates them.
type stats struct {
	sent     atomic.Int64
	ok       atomic.Int64
	aborted  atomic.Int64
	errors   atomic.Int64
	skipped  atomic.Int64
	inflight atomic.Int64

	mu        sync.Mutex
	latencies []float64 // milliseconds, successful requests only
}

// progressLine is the once-a-second report.
type progressLine struct {
	T        float64 `json:"t_s"`
	Sent     int64   `json:"sent"`
	OK       int64   `json:"ok"`
	Aborted  int64   `json:"aborted"`
	Errors   int64   `json:"errors"`
	Skipped  int64   `json:"skipped"`
	Inflight int64   `json:"inflight"`
}

// finalLine is the report printed once, at the end.
type finalLine struct {
	Done    bool    `json:"done"`
	T       float64 `json:"t_s"`
	Sent    int64   `json:"sent"`
	OK      int64   `json:"ok"`
	Aborted int64   `json:"aborted"`
	Errors  int64   `json:"errors"`
	Skipped int64   `json:"skipped"`
	P50     float64 `json:"p50_ms"`
	P99     float64 `json:"p99_ms"`
}

func (s *stats) recordOK(d time.Duration) {
	s.ok.Add(1)
	s.mu.Lock()
	s.latencies = append(s.latencies, float64(d)/float64(time.Millisecond))
	s.mu.Unlock()
}

func (s *stats) progress(elapsed time.Duration) progressLine {
	return progressLine{
		T:        round3(elapsed.Seconds()),
		Sent:     s.sent.Load(),
		OK:       s.ok.Load(),
		Aborted:  s.aborted.Load(),
		Errors:   s.errors.Load(),
		Skipped:  s.skipped.Load(),
		Inflight: s.inflight.Load(),
	}
}

func (s *stats) final(elapsed time.Duration) finalLine {
	s.mu.Lock()
	lat := slices.Clone(s.latencies)
	s.mu.Unlock()
	slices.Sort(lat)
	return finalLine{
		Done:    true,
		T:       round3(elapsed.Seconds()),
		Sent:    s.sent.Load(),
		OK:      s.ok.Load(),
		Aborted: s.aborted.Load(),
		Errors:  s.errors.Load(),
		Skipped: s.skipped.Load(),
		P50:     round3(percentile(lat, 50)),
		P99:     round3(percentile(lat, 99)),
	}
}

// percentile returns the nearest-rank p-th percentile of sorted, or 0 when it
// is empty.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
