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

// Limits on the flags. They keep a mistyped flag from turning the load
// generator into something that takes the machine down.
const (
	maxRate         = 5000
	maxDuration     = 10 * time.Minute
	maxRequestsCap  = 2_000_000
	maxConcurrency  = 4096
	maxPayloadBytes = 8 << 10
)

// config is the validated command line.
type config struct {
	target      string // full URL of POST /checkin
	rate        int
	duration    time.Duration
	maxRequests int64
	concurrency int
	timeout     time.Duration
	// impatient is the share of requests that give up after impatientAfter
	// instead of timeout: agents that disconnect mid-request.
	impatient      float64
	impatientAfter time.Duration
	payloadBytes   int
}

// parseFlags parses and validates args. Errors are one line, without the
// usage text.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var (
		c       config
		base    string
		maxReqs int64
	)
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&base, "url", "http://127.0.0.1:8080", "base URL of the service (loopback only)")
	fs.IntVar(&c.rate, "rate", 400, "requests started per second (open loop), at most 5000")
	fs.DurationVar(&c.duration, "duration", 60*time.Second, "how long to send, at most 10m")
	fs.Int64Var(&maxReqs, "max-requests", 0, "stop after this many requests (default rate*duration, at most 2000000)")
	fs.IntVar(&c.concurrency, "concurrency", 512, "most requests in flight; a request due when the cap is hit is skipped, at most 4096")
	fs.DurationVar(&c.timeout, "timeout", 300*time.Millisecond, "client-side timeout per request; on timeout the client closes the connection")
	fs.Float64Var(&c.impatient, "impatient", 0, "share of requests, 0 to 1, that give up after -impatient-timeout instead")
	fs.DurationVar(&c.impatientAfter, "impatient-timeout", 100*time.Millisecond, "client-side timeout of the impatient share")
	fs.IntVar(&c.payloadBytes, "payload-bytes", 4096, "size of the payload field, at most 8192")
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

	target, err := checkURL(base)
	if err != nil {
		return c, err
	}
	c.target = target

	switch {
	case c.rate < 1 || c.rate > maxRate:
		return c, fmt.Errorf("-rate %d: must be between 1 and %d", c.rate, maxRate)
	case c.duration <= 0 || c.duration > maxDuration:
		return c, fmt.Errorf("-duration %v: must be positive and at most %v", c.duration, maxDuration)
	case maxReqs < 0 || maxReqs > maxRequestsCap:
		return c, fmt.Errorf("-max-requests %d: must be between 0 (rate*duration) and %d", maxReqs, maxRequestsCap)
	case c.concurrency < 1 || c.concurrency > maxConcurrency:
		return c, fmt.Errorf("-concurrency %d: must be between 1 and %d", c.concurrency, maxConcurrency)
	case c.timeout <= 0 || c.timeout > time.Minute:
		return c, fmt.Errorf("-timeout %v: must be positive and at most 1m", c.timeout)
	case c.impatient < 0 || c.impatient > 1:
		return c, fmt.Errorf("-impatient %v: must be between 0 and 1", c.impatient)
	case c.impatientAfter <= 0 || c.impatientAfter > time.Minute:
		return c, fmt.Errorf("-impatient-timeout %v: must be positive and at most 1m", c.impatientAfter)
	case c.payloadBytes < 0 || c.payloadBytes > maxPayloadBytes:
		return c, fmt.Errorf("-payload-bytes %d: must be between 0 and %d", c.payloadBytes, maxPayloadBytes)
	}

	c.maxRequests = maxReqs
	if c.maxRequests == 0 {
		c.maxRequests = min(int64(float64(c.rate)*c.duration.Seconds()), maxRequestsCap)
		c.maxRequests = max(c.maxRequests, 1)
	}
	return c, nil
}

// checkURL accepts an http URL whose host is a loopback address and returns
// the check-in endpoint under it.
func checkURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("-url %q: %v", base, err)
	}
	if u.Scheme != "http" {
		return "", fmt.Errorf("-url %q: scheme must be http", base)
	}
	host := u.Hostname()
	if host != "localhost" {
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsLoopback() {
			return "", fmt.Errorf("-url %q: refusing a non-loopback host", base)
		}
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("-url %q: must not have a query or fragment", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/checkin"
	return u.String(), nil
}
