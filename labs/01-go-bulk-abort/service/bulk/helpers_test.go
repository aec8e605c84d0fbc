package bulk

import (
	"context"
	"testing"
	"time"
)

// gateBackend blocks every call until the test releases it, and tells the
// test when a call has started.
type gateBackend struct {
	called  chan int      // receives len(docs) of every call
	release chan struct{} // one receive lets one call return
}

func newGateBackend() *gateBackend {
	return &gateBackend{called: make(chan int, 16), release: make(chan struct{})}
}

func (b *gateBackend) Bulk(ctx context.Context, docs [][]byte) (uint64, error) {
	b.called <- len(docs)
	select {
	case <-b.release:
		return 1, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// backendCalled waits for the next backend call and returns its number of
// documents, failing the test (rather than hanging) when none comes.
func backendCalled(t *testing.T, b *gateBackend) int {
	t.Helper()
	select {
	case n := <-b.called:
		return n
	case <-time.After(5 * time.Second):
		t.Fatal("no backend call within 5s")
		return 0
	}
}

// testConfig is a small engine whose partial batches are never flushed by the
// ticker, so that only a full batch or the test decides when a flush starts.
func testConfig() Config {
	return Config{
		FlushInterval:  time.Hour,
		MaxBatch:       1,
		QueueSize:      4,
		Flights:        1,
		BackendTimeout: time.Hour,
	}
}

// startEngine runs e until the test ends, and fails the test if Run returns an
// error. The returned function stops the engine and waits for Run.
func startEngine(t *testing.T, e *Engine) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- e.Run(ctx) }()
	<-e.Ready()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

func mustNew(t testing.TB, cfg Config, b Backend) *Engine {
	t.Helper()
	e, err := New(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// doResult is what a Do call running in its own goroutine returns.
type doResult struct {
	res Result
	err error
}

func goDo(ctx context.Context, e *Engine, doc any) <-chan doResult {
	c := make(chan doResult, 1)
	go func() {
		res, err := e.Do(ctx, doc)
		c <- doResult{res, err}
	}()
	return c
}
