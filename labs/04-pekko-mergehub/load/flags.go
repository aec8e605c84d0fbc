package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"leaklab.dev/loadkit"
)

// limits bound the publishing; the count is rate*duration.
var limits = loadkit.Limits{Rate: 10000, Duration: 10 * time.Minute, Concurrency: 4096}

// config is one run of the load: who publishes where, how fast, for how long,
// and which events have someone watching.
type config struct {
	base          string // http://127.0.0.1:PORT
	events        []string
	watched       []string // events that get WebSocket subscribers
	subscribers   int      // per watched event
	skaters       int
	pace          loadkit.Pace // location updates, all skaters together
	timeout       time.Duration
	histogramPath string // where to save the class histogram taken after the load, or ""
	// times after the start of publishing at which to save a class histogram as well,
	// beside histogramPath as histogram-during-<t>.txt (the snapshots taken under load);
	// a time not before the end of a shorter -duration is skipped
	histogramsDuring []time.Duration
	duringNames      []string // each time as given ("30s"), which names its file
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := loadkit.NewFlags(stderr)
	cfg := config{pace: loadkit.Pace{Rate: 300, Duration: 90 * time.Second, Concurrency: 256}}
	var events, watched string
	fs.URL(&cfg.base, "") // required
	fs.StringVar(&events, "events", "race-1,race-2,race-3", "events the skaters publish to, comma separated")
	fs.StringVar(&watched, "watched", "race-1", "events with WebSocket subscribers, comma separated (\"\" for none)")
	fs.IntVar(&cfg.subscribers, "subscribers", 1, "subscribers per watched event")
	fs.IntVar(&cfg.skaters, "skaters", 30, "publishers, spread round-robin over the events")
	fs.Pace(&cfg.pace, "location updates", limits)
	fs.DurationVar(&cfg.timeout, "timeout", 2*time.Second, "per-request timeout")
	fs.StringVar(&cfg.histogramPath, "histogram-out", "", "save GET /debug/class-histogram here when the load ends")
	var during string
	fs.StringVar(&during, "histogram-during", "", "also save histograms during the load at these times, e.g. 30s,60s (needs -histogram-out)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	for _, d := range split(during) {
		t, err := time.ParseDuration(d)
		if err != nil || t <= 0 {
			return cfg, fmt.Errorf("-histogram-during: %q is not a positive duration", d)
		}
		cfg.histogramsDuring = append(cfg.histogramsDuring, t)
		cfg.duringNames = append(cfg.duringNames, d)
	}
	cfg.events = split(events)
	cfg.watched = split(watched)
	return cfg, cfg.check()
}

func (c config) check() error {
	switch {
	case len(c.events) == 0:
		return errors.New("-events must name at least one event")
	case c.skaters < 1 || c.subscribers < 0:
		return errors.New("-skaters must be positive, -subscribers not negative")
	case len(c.histogramsDuring) > 0 && c.histogramPath == "":
		return errors.New("-histogram-during needs -histogram-out (its files go beside it)")
	}
	for _, w := range c.watched {
		if !slices.Contains(c.events, w) {
			return fmt.Errorf("-watched event %q is not one of -events", w)
		}
	}
	return nil
}

func split(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
