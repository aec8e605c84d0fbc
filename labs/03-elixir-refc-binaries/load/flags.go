package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// config is one run's bounds and shape.
type config struct {
	url      string // the service's base URL, http://127.0.0.1:port
	clients  int
	rate     float64 // new clients per second
	duration time.Duration
	requests int // list_items requests per client
	interval time.Duration
	limit    int // items per request
	timeout  time.Duration
	topOut   string
	top      int // rows of the process table to save
	gcOut    string
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.url, "url", "http://127.0.0.1:4000", "service base URL (loopback)")
	fs.IntVar(&cfg.clients, "clients", 300, "most clients to connect in the run")
	fs.Float64Var(&cfg.rate, "rate", 5, "clients connected per second")
	fs.DurationVar(&cfg.duration, "duration", 60*time.Second, "how long the run lasts")
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
	switch {
	case !strings.HasPrefix(cfg.url, "http://127.0.0.1:") && !strings.HasPrefix(cfg.url, "http://localhost:"):
		return cfg, fmt.Errorf("-url %q: loopback only", cfg.url)
	case cfg.clients < 1 || cfg.clients > 2000:
		return cfg, errors.New("-clients must be 1..2000")
	case cfg.rate <= 0 || cfg.rate > 200:
		return cfg, errors.New("-rate must be in (0, 200]")
	case cfg.duration <= 0 || cfg.duration > 10*time.Minute:
		return cfg, errors.New("-duration must be in (0, 10m]")
	case cfg.requests < 0 || cfg.requests > 100:
		return cfg, errors.New("-requests must be 0..100")
	case cfg.limit < 1 || cfg.limit > 100:
		return cfg, errors.New("-limit must be 1..100")
	case cfg.top < 1 || cfg.top > 1000:
		return cfg, errors.New("-top must be 1..1000")
	case cfg.interval < 0 || cfg.timeout <= 0:
		return cfg, errors.New("-interval must be >= 0 and -timeout > 0")
	}
	return cfg, nil
}
