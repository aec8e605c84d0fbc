package main

import (
	"cmp"
	"io"
	"time"

	"leaklab.dev/loadkit"
)

// limits keep a mistyped flag from turning the load generator into something that
// takes the machine down.
var limits = loadkit.Limits{Rate: 5000, Duration: 10 * time.Minute, Requests: 2_000_000, Concurrency: 4096}

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
}

// parseFlags parses and validates args. Errors are one line, without the
// usage text.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	c := config{pace: loadkit.Pace{Rate: 400, Duration: time.Minute, Concurrency: 512}}
	fs := loadkit.NewFlags(stderr)
	fs.URL(&c.target, "http://127.0.0.1:8080")
	fs.Pace(&c.pace, "requests", limits)
	fs.DurationVar(&c.timeout, "timeout", 300*time.Millisecond, "client-side timeout per request; on timeout the client closes the connection")
	fs.Float64Var(&c.impatient, "impatient", 0, "share of requests, 0 to 1, that give up after -impatient-timeout instead")
	fs.DurationVar(&c.impatientAfter, "impatient-timeout", 100*time.Millisecond, "client-side timeout of the impatient share")
	fs.IntVar(&c.payloadBytes, "payload-bytes", 4096, "size of the payload field, at most 8192")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.target += "/checkin"
	return c, cmp.Or(
		loadkit.Positive("-timeout", c.timeout, time.Minute),
		loadkit.Within("-impatient", c.impatient, 0, 1),
		loadkit.Positive("-impatient-timeout", c.impatientAfter, time.Minute),
		loadkit.Within("-payload-bytes", c.payloadBytes, 0, maxPayloadBytes),
	)
}
