// Package bulk batches small writes into bulk calls to a slow backend.
//
// Callers hand a document to Engine.Do, which encodes it into a pooled object,
// puts the object on a bounded queue and waits for its answer. The Run loop
// gathers queued objects into batches and flushes each batch in its own
// goroutine, with at most Config.Flights backend calls at a time.
package bulk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Engine owns the queue, the Run loop and the pool of bulk objects. One Engine
// is shared by every request handler of the service.
type Engine struct {
	cfg     Config
	backend Backend

	queue chan *bulkT
	// slots limits concurrent backend calls: Run sends to take a slot, a
	// flush receives to give it back.
	slots chan struct{}
	// flights tracks flush goroutines so Run can wait for them on shutdown.
	flights sync.WaitGroup

	running atomic.Bool
	ready   chan struct{} // closed when Run starts
	done    chan struct{} // closed when Run has returned

	pool  blkPool
	stats Stats
	hooks hooks
}

// hooks lets tests in this package observe the engine at points where timing
// matters, without sleeping. Every field may be nil.
type hooks struct {
	// taken is called by Run for every object it takes off the queue.
	taken func(*bulkT)
	// freed is called for every object returned to the pool.
	freed func(*bulkT)
}

// Result is the backend's answer to one document.
type Result struct {
	// Seq is the sequence number the backend assigned to the document.
	Seq uint64
}

// New returns an engine that flushes to backend. Call Run to start it.
func New(cfg Config, backend Backend) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if backend == nil {
		return nil, errors.New("bulk: nil backend")
	}
	e := &Engine{
		cfg:     cfg,
		backend: backend,
		queue:   make(chan *bulkT, cfg.QueueSize),
		slots:   make(chan struct{}, cfg.Flights),
		ready:   make(chan struct{}),
		done:    make(chan struct{}),
	}
	e.pool.init(&e.stats)
	return e, nil
}

// Stats returns the engine's counters.
func (e *Engine) Stats() *Stats { return &e.stats }

// Ready returns a channel that is closed once Run has started.
func (e *Engine) Ready() <-chan struct{} { return e.ready }

// Done returns a channel that is closed once Run has returned.
func (e *Engine) Done() <-chan struct{} { return e.done }

// Do encodes doc as JSON and sends it to the backend in the next batch. It
// returns when the batch has been flushed, when ctx ends (an *AbortError), or
// when the engine stops (ErrClosed).
func (e *Engine) Do(ctx context.Context, doc any) (Result, error) {
	blk := e.newBlk()
	if err := json.NewEncoder(blk.buf).Encode(doc); err != nil {
		e.freeBlk(blk)
		return Result{}, fmt.Errorf("bulk: encode: %w", err)
	}
	resp, err := e.dispatch(ctx, blk)
	if err != nil {
		return Result{}, err
	}
	// The flush has answered and no longer refers to blk.
	e.freeBlk(blk)
	if resp.err != nil {
		return Result{}, resp.err
	}
	return Result{Seq: resp.seq}, nil
}

// dispatch queues blk for the Run loop and waits for the flush's answer.
func (e *Engine) dispatch(ctx context.Context, blk *bulkT) (respT, error) {
	select {
	case e.queue <- blk:
	case <-ctx.Done():
		return respT{}, &AbortError{Enqueued: false, Err: ctx.Err()}
	case <-e.done:
		return respT{}, ErrClosed
	}

	select {
	case resp := <-blk.ch:
		return resp, nil
	case <-ctx.Done():
		return respT{}, &AbortError{Enqueued: true, Err: ctx.Err()}
	case <-e.done:
		return respT{}, ErrClosed
	}
}

// Run gathers queued objects into batches and starts a flush for each one,
// until ctx ends. Before it returns it waits for the flushes it started. Run
// may be called once; it returns nil when ctx ends.
func (e *Engine) Run(ctx context.Context) error {
	if !e.running.CompareAndSwap(false, true) {
		return errors.New("bulk: Run called twice")
	}
	defer close(e.done)
	defer e.flights.Wait()

	ticker := time.NewTicker(e.cfg.FlushInterval)
	defer ticker.Stop()
	close(e.ready)

	batch := make([]*bulkT, 0, e.cfg.MaxBatch)
	for {
		select {
		case <-ctx.Done():
			return nil
		case blk := <-e.queue:
			if e.hooks.taken != nil {
				e.hooks.taken(blk)
			}
			batch = append(batch, blk)
			if len(batch) < e.cfg.MaxBatch {
				continue
			}
		case <-ticker.C:
			if len(batch) == 0 {
				continue
			}
		}

		// Waiting for a slot here is what makes a slow backend push back:
		// while Run waits, nobody reads the queue, and callers wait to
		// enqueue.
		select {
		case e.slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		e.flights.Add(1)
		go e.flush(ctx, batch)
		batch = make([]*bulkT, 0, e.cfg.MaxBatch)
	}
}
