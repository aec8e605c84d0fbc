package main

import (
	"cmp"
	"io"
	"time"

	"leaklab.dev/loadkit"
)

// limits keep a mistyped flag from turning the load generator into something that
// takes the machine down.
// The kit's -concurrency flag is not used (Concurrency 0): this lab's own allows 0, no
// cap, for the storm, whose backlog must be the service's and not the load's.
var limits = loadkit.Limits{Rate: 5000, Duration: 10 * time.Minute, Requests: 2_000_000}

// maxConcurrency is the most -concurrency may say; 0 is no cap at all.
const maxConcurrency = 4096

// maxRetries bounds -retries, so that a mistyped flag cannot multiply the load.
const maxRetries = 20

const maxPayloadBytes = 8 << 10

// config is the validated command line.
type config struct {
	target  string // full URL of POST /checkin
	pace    loadkit.Pace
	timeout time.Duration
	// impatient is the share of requests that give up after impatientAfter
	// instead of timeout: agents that disconnect mid-request.
	impatient      float64
	impatientAfter time.Duration
	payloadBytes   int
	// retries is how many times an agent whose check-in failed (its own timeout,
	// a refused connection, any answer outside 2xx, a 429 included) checks in
	// again; 0, the standard load, never retries.
	retries int
	// backoff is the wait before each retry: Elastic Agent's equal-jitter
	// exponential backoff, scaled (see retry.go).
	backoff backoff
}

// parseFlags parses and validates args. Errors are one line, without the
// usage text.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	c := config{pace: loadkit.Pace{Rate: 400, Duration: time.Minute}}
	fs := loadkit.NewFlags(stderr)
	fs.URL(&c.target, "http://127.0.0.1:8080")
	fs.Pace(&c.pace, "requests", limits)
	fs.IntVar(&c.pace.Concurrency, "concurrency", 512,
		"most check-ins in flight, retries included; one due when the cap is hit is skipped; 0: no cap (rate, count and time still bound the load), at most 4096")
	fs.IntVar(&c.retries, "retries", 0, "how many times an agent whose check-in failed checks in again (0: never), at most 20")
	fs.DurationVar(&c.backoff.init, "retry-backoff", 60*time.Second, "the first retry's backoff (Elastic Agent's default: 60s); each retry doubles it, and waits between half of it and all of it")
	fs.DurationVar(&c.backoff.max, "retry-backoff-max", 10*time.Minute, "the largest backoff (Elastic Agent's default: 10m)")
	fs.DurationVar(&c.timeout, "timeout", 300*time.Millisecond, "client-side timeout per request; on timeout the client closes the connection")
	fs.Float64Var(&c.impatient, "impatient", 0, "share of requests, 0 to 1, that give up after -impatient-timeout instead")
	fs.DurationVar(&c.impatientAfter, "impatient-timeout", 100*time.Millisecond, "client-side timeout of the impatient share")
	fs.IntVar(&c.payloadBytes, "payload-bytes", 4096, "size of the payload field, at most 8192")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.target += "/checkin"
	return c, cmp.Or(
		loadkit.Within("-concurrency", c.pace.Concurrency, 0, maxConcurrency),
		loadkit.Within("-retries", c.retries, 0, maxRetries),
		loadkit.Positive("-retry-backoff", c.backoff.init, 10*time.Minute),
		loadkit.Positive("-retry-backoff-max", c.backoff.max, time.Hour),
		loadkit.Positive("-timeout", c.timeout, time.Minute),
		loadkit.Within("-impatient", c.impatient, 0, 1),
		loadkit.Positive("-impatient-timeout", c.impatientAfter, time.Minute),
		loadkit.Within("-payload-bytes", c.payloadBytes, 0, maxPayloadBytes),
	)
}
