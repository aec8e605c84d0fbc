package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"
)

// Caps on the flags, so a typo cannot turn the driver into a machine-killer.
const (
	maxRate        = 2000
	maxDuration    = 15 * time.Minute
	maxRequestsCap = 1_000_000
	maxConcurrency = 2048
	maxCount       = 100_000
)

// config is the validated command line.
type config struct {
	base        string // http://127.0.0.1:PORT, no trailing slash
	rate        int
	duration    time.Duration
	maxRequests int64
	concurrency int
	timeout     time.Duration
	matches     int
	perMatch    int // events in one match: players x events per player
	count       int // events asked for per replay
	seed        uint64
}

// parseFlags parses and checks args; errors are one line.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var (
		c        config
		base     string
		maxReqs  int64
		players  int
		perPlyr  int
		seedFlag int64
	)
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&base, "url", "http://127.0.0.1:8080", "base URL of the replay service (loopback only)")
	fs.IntVar(&c.rate, "rate", 20, "replay requests started per second (open loop), at most 2000")
	fs.DurationVar(&c.duration, "duration", 60*time.Second, "how long to send, at most 15m")
	fs.Int64Var(&maxReqs, "max-requests", 0, "stop after this many requests (default rate*duration)")
	fs.IntVar(&c.concurrency, "concurrency", 256, "most requests in flight; a request due when the cap is hit is skipped")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "client-side timeout per request, including reading the whole body")
	fs.IntVar(&c.matches, "matches", 64, "matches the service holds (its --matches)")
	fs.IntVar(&players, "players", 72, "players per match (the service's --players)")
	fs.IntVar(&perPlyr, "events-per-player", 256, "events per player (the service's --events-per-player)")
	fs.IntVar(&c.count, "count", 512, "events asked for per replay request")
	fs.Int64Var(&seedFlag, "seed", 1, "seed of the request mix; the same seed sends the same requests")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.PrintDefaults()
		}
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	b, err := checkURL(base)
	if err != nil {
		return c, err
	}
	c.base = b
	c.seed = uint64(seedFlag)

	switch {
	case c.rate < 1 || c.rate > maxRate:
		return c, fmt.Errorf("-rate %d: must be between 1 and %d", c.rate, maxRate)
	case c.duration <= 0 || c.duration > maxDuration:
		return c, fmt.Errorf("-duration %v: must be positive and at most %v", c.duration, maxDuration)
	case maxReqs < 0 || maxReqs > maxRequestsCap:
		return c, fmt.Errorf("-max-requests %d: must be between 0 (rate*duration) and %d", maxReqs, maxRequestsCap)
	case c.concurrency < 1 || c.concurrency > maxConcurrency:
		return c, fmt.Errorf("-concurrency %d: must be between 1 and %d", c.concurrency, maxConcurrency)
	case c.timeout <= 0 || c.timeout > 5*time.Minute:
		return c, fmt.Errorf("-timeout %v: must be positive and at most 5m", c.timeout)
	case c.matches < 1 || c.matches > 100_000:
		return c, fmt.Errorf("-matches %d: must be between 1 and 100000", c.matches)
	case players < 1 || players > 10_000 || perPlyr < 1 || perPlyr > 100_000:
		return c, fmt.Errorf("-players %d -events-per-player %d: out of range", players, perPlyr)
	}
	c.perMatch = players * perPlyr
	if c.count < 1 || c.count > maxCount || c.count > c.perMatch {
		return c, fmt.Errorf("-count %d: must be between 1 and min(%d, events per match %d)", c.count, maxCount, c.perMatch)
	}
	c.maxRequests = maxReqs
	if c.maxRequests == 0 {
		c.maxRequests = min(max(int64(float64(c.rate)*c.duration.Seconds()), 1), maxRequestsCap)
	}
	return c, nil
}

// checkURL accepts an http URL on a loopback host and returns it without a
// trailing slash.
func checkURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("-url %q: %v", base, err)
	}
	if u.Scheme != "http" {
		return "", fmt.Errorf("-url %q: scheme must be http", base)
	}
	if host := u.Hostname(); host != "localhost" {
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return "", fmt.Errorf("-url %q: refusing a non-loopback host", base)
		}
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("-url %q: must not have a query or fragment", base)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}
