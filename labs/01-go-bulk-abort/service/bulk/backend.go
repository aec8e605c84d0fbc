package bulk

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// Backend is where batches go. It exists so that the service can run against
// a fake with a chosen latency and tests can run against backends they control.
type Backend interface {
	// Bulk stores docs and returns the sequence number assigned to the first
	// one; the others follow in order. It must return when ctx ends.
	Bulk(ctx context.Context, docs [][]byte) (first uint64, err error)
}

// SlowBackend is a fake backend that takes Latency to answer every call. It
// stands in for a real datastore under load, where each bulk call costs
// about the same no matter how small the batch is.
type SlowBackend struct {
	// Latency is how long every call takes.
	Latency time.Duration
	// Timeout, when positive, bounds every call, whatever the caller's
	// context says.
	Timeout time.Duration

	seq   atomic.Uint64
	bytes atomic.Uint64
}

// Bulk waits Latency, or until ctx or the backend's own timeout ends.
func (b *SlowBackend) Bulk(ctx context.Context, docs [][]byte) (uint64, error) {
	if b.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.Timeout)
		defer cancel()
	}
	t := time.NewTimer(b.Latency)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return 0, fmt.Errorf("slow backend: %w", ctx.Err())
	}

	var n int
	for _, d := range docs {
		n += len(d)
	}
	b.bytes.Add(uint64(n))
	end := b.seq.Add(uint64(len(docs)))
	return end - uint64(len(docs)) + 1, nil
}

// Bytes reports how many document bytes the backend has stored.
func (b *SlowBackend) Bytes() uint64 { return b.bytes.Load() }

// Docs reports how many documents the backend has stored.
func (b *SlowBackend) Docs() uint64 { return b.seq.Load() }
