package main

import (
	"math"
	"sync/atomic"
	"time"
)

// stats holds the cumulative counts the generator reports; every client updates them.
type stats struct {
	connected atomic.Int64 // handshakes that succeeded
	joined    atomic.Int64
	sent      atomic.Int64 // list_items requests written
	ok        atomic.Int64 // replies with status ok and the asked number of items
	errors    atomic.Int64 // failed connects, error replies, timeouts, bad replies
	bytes     atomic.Int64 // reply bytes received
	open      atomic.Int64 // sockets open now (a gauge, not a count)
}

type progressLine struct {
	T         float64 `json:"t_s"`
	Connected int64   `json:"connected"`
	Joined    int64   `json:"joined"`
	Sent      int64   `json:"sent"`
	OK        int64   `json:"ok"`
	Errors    int64   `json:"errors"`
	Bytes     int64   `json:"reply_bytes"`
	Open      int64   `json:"open"`
}

type finalLine struct {
	Done bool `json:"done"`
	progressLine
}

func (s *stats) progress(elapsed time.Duration) progressLine {
	return progressLine{
		T:         math.Round(elapsed.Seconds()*1000) / 1000,
		Connected: s.connected.Load(),
		Joined:    s.joined.Load(),
		Sent:      s.sent.Load(),
		OK:        s.ok.Load(),
		Errors:    s.errors.Load(),
		Bytes:     s.bytes.Load(),
		Open:      s.open.Load(),
	}
}

func (s *stats) final(elapsed time.Duration) finalLine {
	return finalLine{Done: true, progressLine: s.progress(elapsed)}
}
