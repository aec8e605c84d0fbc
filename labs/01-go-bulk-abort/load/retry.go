package main

import (
	"math/rand/v2"
	"time"
)

// backoff is how long an agent waits before checking in again after a failed
// check-in. It follows what Elastic Agent's fleet gateway does (its defaults are
// an initial backoff of 60 s and a largest of 10 min, with "equal jitter"): the
// k-th retry (k from 1) waits b plus a random share of b, so between b and 2b,
// where b = init·2^(k-1), at most max/2 (the backoff, doubled after each retry,
// stops growing at max). The storm scales both by the storm's own clock.
type backoff struct {
	init, max time.Duration
}

// wait is the k-th retry's wait, drawn from r.
func (b backoff) wait(k int, r *rand.Rand) time.Duration {
	base := b.init
	for i := 1; i < k && base < b.max/2; i++ {
		base *= 2
	}
	base = max(min(base, b.max/2), time.Millisecond)
	return base + time.Duration(r.Int64N(int64(base)))
}

// agentRand is agent n's own source of jitter: the same for agent n in every run,
// so that two runs of a load retry at the same moments relative to their failures.
func agentRand(n int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(n), 0x1ab01))
}
