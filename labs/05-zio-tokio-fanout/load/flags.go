package main

import (
	"fmt"
	"io"
	"time"

	"leaklab.dev/loadkit"
)

// limits keep a typo from turning the driver into a machine-killer.
var limits = loadkit.Limits{Rate: 2000, Duration: 15 * time.Minute, Requests: 1_000_000, Concurrency: 2048}

const maxCount = 100_000

// config is the validated command line.
type config struct {
	base     string // http://127.0.0.1:PORT, no trailing slash
	pace     loadkit.Pace
	timeout  time.Duration
	matches  int
	perMatch int // events in one match: players x events per player
	count    int // events asked for per replay
	seed     uint64
}

// parseFlags parses and checks args; errors are one line.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var (
		players  int
		perPlyr  int
		seedFlag int64
	)
	c := config{pace: loadkit.Pace{Rate: 20, Duration: 60 * time.Second, Concurrency: 256}}
	fs := loadkit.NewFlags(stderr)
	fs.URL(&c.base, "http://127.0.0.1:8080")
	fs.Pace(&c.pace, "replay requests", limits)
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "client-side timeout per request, including reading the whole body")
	fs.IntVar(&c.matches, "matches", 64, "matches the service holds (its --matches)")
	fs.IntVar(&players, "players", 72, "players per match (the service's --players)")
	fs.IntVar(&perPlyr, "events-per-player", 256, "events per player (the service's --events-per-player)")
	fs.IntVar(&c.count, "count", 512, "events asked for per replay request")
	fs.Int64Var(&seedFlag, "seed", 1, "seed of the request mix; the same seed sends the same requests")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.seed = uint64(seedFlag)

	if err := loadkit.Positive("-timeout", c.timeout, 5*time.Minute); err != nil {
		return c, err
	}
	if err := loadkit.Within("-matches", c.matches, 1, 100_000); err != nil {
		return c, err
	}
	if players < 1 || players > 10_000 || perPlyr < 1 || perPlyr > 100_000 {
		return c, fmt.Errorf("-players %d -events-per-player %d: out of range", players, perPlyr)
	}
	c.perMatch = players * perPlyr
	if c.count < 1 || c.count > maxCount || c.count > c.perMatch {
		return c, fmt.Errorf("-count %d: must be between 1 and min(%d, events per match %d)", c.count, maxCount, c.perMatch)
	}
	return c, nil
}
