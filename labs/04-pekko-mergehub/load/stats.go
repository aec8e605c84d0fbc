package main

import (
	"math"
	"sync/atomic"
	"time"
)

// stats are the run's cumulative counters, safe for concurrent use.
type stats struct {
	sent, accepted, dropped, errors, timedOut, skipped atomic.Int64
	inflight                                           atomic.Int64
	received, subscribed, subscriberErrors             atomic.Int64
}

// progress is one line of the harness protocol: cumulative counts so far.
type progress struct {
	TS       float64 `json:"t_s"`
	Sent     int64   `json:"sent"`
	OK       int64   `json:"ok"`
	Dropped  int64   `json:"dropped"`
	Errors   int64   `json:"errors"`
	TimedOut int64   `json:"timed_out"`
	// Aborted is the harness's name for requests the client gave up on: here the
	// same count as TimedOut (a request abandoned at -timeout), so `leaklab compare`
	// and the deck's "client aborts" column show it.
	Aborted          int64 `json:"aborted"`
	Skipped          int64 `json:"skipped"`
	Received         int64 `json:"received"`
	Subscribers      int64 `json:"subscribers"`
	SubscriberErrors int64 `json:"subscriber_errors"`
	Done             bool  `json:"done,omitempty"`
	Histogram        *bool `json:"histogram,omitempty"`
	HistogramsDuring *int  `json:"histograms_during,omitempty"`
}

func (s *stats) progress(elapsed time.Duration) progress {
	return progress{
		TS:               math.Round(elapsed.Seconds()*1000) / 1000,
		Sent:             s.sent.Load(),
		OK:               s.accepted.Load() + s.dropped.Load(),
		Dropped:          s.dropped.Load(),
		Errors:           s.errors.Load(),
		TimedOut:         s.timedOut.Load(),
		Aborted:          s.timedOut.Load(),
		Skipped:          s.skipped.Load(),
		Received:         s.received.Load(),
		Subscribers:      s.subscribed.Load(),
		SubscriberErrors: s.subscriberErrors.Load(),
	}
}
