package loadkit

import (
	"context"
	"time"
)

// tick is how often the pacer catches up with the rate: work due within one tick
// starts together.
const tick = 5 * time.Millisecond

// Pace is the shape of an open loop: Rate starts per second for Duration, at most Max
// of them (0: no count bound), with at most Concurrency in flight (enforced by a
// [Gate]; 0: no cap). A run normally ends when Max have started; with Hold it goes
// on to the end of Duration (clients that stay connected once all have joined).
type Pace struct {
	Rate        float64
	Duration    time.Duration
	Max         int64
	Concurrency int
	Hold        bool
}

// Stop says why a paced run ended; it is lab 05's "stopped" in the final line.
type Stop string

// Why a paced run ended.
const (
	StopDuration    Stop = "duration"
	StopMaxRequests Stop = "max-requests"
	StopSignal      Stop = "signal"
)

// Run calls begin(n) for n = 0, 1, 2, ... as each falls due, n/Rate seconds after
// the report's start, and prints a progress line every second, until Duration or
// Max is reached or ctx ends. begin runs on the pacer's goroutine: it must not block.
func (p Pace) Run(ctx context.Context, rep *Report, begin func(n int64)) Stop {
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	every := time.NewTicker(time.Second)
	defer every.Stop()
	var issued int64
	for {
		select {
		case <-ctx.Done():
			return StopSignal
		case <-every.C:
			rep.Progress()
		case now := <-ticker.C:
			elapsed := min(now.Sub(rep.start), p.Duration)
			due := int64(elapsed.Seconds() * p.Rate)
			if p.Max > 0 {
				due = min(due, p.Max)
			}
			for ; issued < due; issued++ {
				begin(issued)
			}
			switch {
			case elapsed >= p.Duration:
				return StopDuration
			case p.Max > 0 && issued >= p.Max && !p.Hold:
				return StopMaxRequests
			}
		}
	}
}
