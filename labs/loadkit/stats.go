package loadkit

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Counter is one cumulative count, safe for concurrent use.
type Counter struct{ atomic.Int64 }

// Stats is the counters and gauges of a run, printed by name in the order they were
// declared. The zero value is empty and ready; declare everything before the run.
type Stats struct {
	fields []stat
}

type stat struct {
	name  string
	read  func() int64
	final bool // also in the final line (a gauge is not)
}

// Counter declares a cumulative count, printed in every line.
func (s *Stats) Counter(name string) *Counter {
	c := &Counter{}
	s.fields = append(s.fields, stat{name, c.Load, true})
	return c
}

// Func declares a value read when a line is printed, in every line (the final one
// too): a level whose last value matters, or another name for a count.
func (s *Stats) Func(name string, read func() int64) {
	s.fields = append(s.fields, stat{name, read, true})
}

// Gauge declares a level read when a line is printed (requests in flight), in the
// progress lines only: at the end it says nothing about the run.
func (s *Stats) Gauge(name string, read func() int64) {
	s.fields = append(s.fields, stat{name, read, false})
}

// Requests are the counts of an open loop of requests, and the latencies of the
// successful ones. Aborted is the harness's name for requests the client gave up on
// (its timeout, or a signal).
type Requests struct {
	Sent, OK, Errors, Aborted, Skipped *Counter

	mu        sync.Mutex
	latencies []float64 // milliseconds, successful requests only
}

// Requests declares sent, ok, errors, aborted and skipped, in that order.
func (s *Stats) Requests() *Requests {
	return &Requests{
		Sent:    s.Counter("sent"),
		OK:      s.Counter("ok"),
		Errors:  s.Counter("errors"),
		Aborted: s.Counter("aborted"),
		Skipped: s.Counter("skipped"),
	}
}

// Start sends one request in its own goroutine of g and counts it as sent, or, when
// g is full, counts it as skipped and never sends it.
func (r *Requests) Start(g *Gate, send func()) {
	if g.Full() {
		r.Skipped.Add(1)
		return
	}
	r.Sent.Add(1)
	g.Go(send)
}

// RecordOK counts a successful request that took d.
func (r *Requests) RecordOK(d time.Duration) {
	r.OK.Add(1)
	r.mu.Lock()
	r.latencies = append(r.latencies, float64(d)/float64(time.Millisecond))
	r.mu.Unlock()
}

// Latency is the successful requests' latency so far, in milliseconds to the
// microsecond: nearest-rank percentiles and the largest; all 0 without one.
type Latency struct{ P50, P99, Max float64 }

// Latency sorts a copy of the latencies recorded so far.
func (r *Requests) Latency() Latency {
	r.mu.Lock()
	lat := slices.Clone(r.latencies)
	r.mu.Unlock()
	slices.Sort(lat)
	var top float64
	if len(lat) > 0 {
		top = lat[len(lat)-1]
	}
	return Latency{round3(percentile(lat, 50)), round3(percentile(lat, 99)), round3(top)}
}

// percentile is the nearest-rank p-th percentile of an ascending slice: the smallest
// value with at least p% of the values at or below it. It is 0 for an empty slice.
func percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// Field is one key of a line beyond the counters: a percentile, a stop reason.
type Field struct {
	Key   string
	Value any
}

// Report prints a run's lines (the protocol, see the package doc) from its Stats;
// t_s counts from when it was made.
type Report struct {
	mu    sync.Mutex // a disturbance may be announced while the pacer prints progress
	enc   *json.Encoder
	stats *Stats
	start time.Time
}

// NewReport starts the run's clock.
func NewReport(out io.Writer, stats *Stats) *Report {
	return &Report{enc: json.NewEncoder(out), stats: stats, start: time.Now()}
}

// Elapsed is the time since the report was made.
func (r *Report) Elapsed() time.Duration { return time.Since(r.start) }

// Progress prints one progress line: t_s, then every counter and gauge. A line that
// cannot be written is dropped: the final line says whether stdout still works.
func (r *Report) Progress() {
	line := []Field{{"t_s", round3(r.Elapsed().Seconds())}}
	for _, f := range r.stats.fields {
		line = append(line, Field{f.name, f.read()})
	}
	r.write(line)
}

// Disturb says, just before the program does it, that what it does next disturbs the
// service for about d (a forced full GC): the harness leaves those seconds out of its
// fits and fits the stretches before and after with levels of their own.
func (r *Report) Disturb(d time.Duration) {
	r.write([]Field{{"t_s", round3(r.Elapsed().Seconds())}, {"disturb_s", round3(d.Seconds())}})
}

func (r *Report) write(line []Field) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.enc.Encode(object(line))
}

// Final prints the final line: "done": true, t_s, every counter (no gauge), then
// extra in order.
func (r *Report) Final(extra ...Field) error {
	line := []Field{{"done", true}, {"t_s", round3(r.Elapsed().Seconds())}}
	for _, f := range r.stats.fields {
		if f.final {
			line = append(line, Field{f.name, f.read()})
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.enc.Encode(object(append(line, extra...)))
}

// object is a JSON object whose keys keep their order.
type object []Field

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		key, err := json.Marshal(f.Key)
		if err != nil {
			return nil, err
		}
		value, err := json.Marshal(f.Value)
		if err != nil {
			return nil, err
		}
		b.Write(key)
		b.WriteByte(':')
		b.Write(value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
