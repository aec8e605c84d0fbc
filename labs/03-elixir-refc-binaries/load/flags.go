package main

import (
	"cmp"
	"io"
	"time"

	"leaklab.dev/loadkit"
)

// limits bound the connect rate and the run; -clients bounds the count.
var limits = loadkit.Limits{Rate: 200, Duration: 10 * time.Minute}

// config is one run's bounds and shape.
type config struct {
	url      string // the service's base URL, http://127.0.0.1:port
	pace     loadkit.Pace
	requests int // list_items requests per client
	interval time.Duration
	limit    int // items per request
	timeout  time.Duration
	topOut   string
	top      int // rows of the process table to save
	gcOut    string
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	// Clients stay connected, idle, to the end of the duration once all have joined.
	cfg := config{pace: loadkit.Pace{Rate: 5, Duration: 60 * time.Second, Hold: true}}
	fs := loadkit.NewFlags(stderr)
	fs.URL(&cfg.url, "http://127.0.0.1:4000")
	fs.Int64Var(&cfg.pace.Max, "clients", 300, "most clients to connect in the run, at most 2000")
	fs.Pace(&cfg.pace, "clients", limits)
	fs.IntVar(&cfg.requests, "requests", 3, "list_items requests per client, then it idles")
	fs.DurationVar(&cfg.interval, "interval", time.Second, "pause between a client's requests")
	fs.IntVar(&cfg.limit, "limit", 100, "items per request (1..100)")
	fs.DurationVar(&cfg.timeout, "timeout", 10*time.Second, "per connect and per request")
	fs.StringVar(&cfg.topOut, "top-out", "", "save the service's process table here before disconnecting")
	fs.IntVar(&cfg.top, "top", 1000, "rows of the process table -top-out saves (by memory)")
	fs.StringVar(&cfg.gcOut, "gc-out", "", "run the node-wide GC experiment and save its result here")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	return cfg, cmp.Or(
		loadkit.Within("-clients", cfg.pace.Max, 1, 2000),
		loadkit.Within("-requests", cfg.requests, 0, 100),
		loadkit.Within("-limit", cfg.limit, 1, 100),
		loadkit.Within("-top", cfg.top, 1, 1000),
		loadkit.Within("-interval", cfg.interval, 0, time.Hour),
		loadkit.Positive("-timeout", cfg.timeout, time.Hour),
	)
}
