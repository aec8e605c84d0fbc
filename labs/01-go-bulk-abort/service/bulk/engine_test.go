package bulk

import (
	"context"
	"errors"
	"testing"
	"time"
)

type doc struct {
	AgentID string `json:"agent_id"`
}

func TestNewRejectsBadConfig(t *testing.T) {
	bad := []func(*Config){
		func(c *Config) { c.FlushInterval = 0 },
		func(c *Config) { c.MaxBatch = 0 },
		func(c *Config) { c.QueueSize = -1 },
		func(c *Config) { c.Flights = 0 },
		func(c *Config) { c.BackendTimeout = 0 },
	}
	for i, mutate := range bad {
		cfg := DefaultConfig()
		mutate(&cfg)
		if _, err := New(cfg, &SlowBackend{}); err == nil {
			t.Errorf("case %d: New accepted %+v", i, cfg)
		}
	}
	if _, err := New(DefaultConfig(), nil); err == nil {
		t.Error("New accepted a nil backend")
	}
}

func TestDoSuccess(t *testing.T) {
	cfg := testConfig()
	cfg.MaxBatch = 2
	cfg.FlushInterval = time.Millisecond
	e := mustNew(t, cfg, &SlowBackend{})
	stop := startEngine(t, e)

	for i := range 5 {
		res, err := e.Do(context.Background(), doc{AgentID: "a"})
		if err != nil {
			t.Fatalf("Do %d: %v", i, err)
		}
		if res.Seq != uint64(i+1) {
			t.Errorf("Do %d: seq = %d, want %d", i, res.Seq, i+1)
		}
	}
	stop()
	if got := e.Stats().Frees.Load(); got != 5 {
		t.Errorf("frees = %d, want 5", got)
	}
	if got := e.Stats().Flushes.Load(); got != 5 {
		t.Errorf("flushes = %d, want 5", got)
	}
}

func TestDoWaitsForFlush(t *testing.T) {
	b := newGateBackend()
	e := mustNew(t, testConfig(), b)
	startEngine(t, e)

	res := goDo(context.Background(), e, doc{AgentID: "a"})
	if n := backendCalled(t, b); n != 1 {
		t.Fatalf("backend got %d docs, want 1", n)
	}
	select {
	case r := <-res:
		t.Fatalf("Do returned before the backend answered: %+v", r)
	default:
	}
	b.release <- struct{}{}
	if r := <-res; r.err != nil || r.res.Seq != 1 {
		t.Fatalf("Do = %+v, want seq 1 and no error", r)
	}
}

func TestDoBackendTimeout(t *testing.T) {
	cfg := testConfig()
	cfg.BackendTimeout = time.Millisecond
	b := newGateBackend() // never released: the call ends at its deadline
	e := mustNew(t, cfg, b)
	startEngine(t, e)

	_, err := e.Do(context.Background(), doc{AgentID: "a"})
	if !errors.Is(err, ErrBackendTimeout) {
		t.Fatalf("Do error = %v, want ErrBackendTimeout", err)
	}
	backendCalled(t, b)
}

func TestDoEncodeError(t *testing.T) {
	e := mustNew(t, testConfig(), &SlowBackend{})
	if _, err := e.Do(context.Background(), make(chan int)); err == nil {
		t.Fatal("Do accepted a document that cannot be encoded")
	}
}

// An abort before the enqueue: the engine is not running and its queue has no
// room, and the context is already cancelled, so dispatch can only give up
// before the enqueue.
func TestDoAbortBeforeEnqueue(t *testing.T) {
	cfg := testConfig()
	cfg.QueueSize = 0
	e := mustNew(t, cfg, &SlowBackend{})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.Do(ctx, doc{AgentID: "a"})

	var abort *AbortError
	if !errors.As(err, &abort) || abort.Enqueued {
		t.Fatalf("Do error = %#v, want *AbortError before enqueue", err)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Do error %v does not wrap context.Canceled", err)
	}
}

// An abort after the enqueue: the caller's document waits in a batch that is
// not full (it is flushed only when full), long enough for the caller to be in
// the engine when its deadline passes; stopping the engine then drops the
// unflushed batch, so no answer is ever sent.
func TestDoAbortAfterEnqueue(t *testing.T) {
	cfg := testConfig()
	cfg.MaxBatch = 2
	e := mustNew(t, cfg, &SlowBackend{})
	stop := startEngine(t, e)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := e.Do(ctx, doc{AgentID: "a"})

	var abort *AbortError
	if !errors.As(err, &abort) || !abort.Enqueued {
		t.Fatalf("Do error = %#v, want *AbortError after enqueue", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Do error %v does not wrap context.DeadlineExceeded", err)
	}
	stop()
}

// Stopping the engine answers a caller whose object sits in an unflushed
// batch, and later calls fail fast.
func TestEngineShutdown(t *testing.T) {
	cfg := testConfig()
	cfg.MaxBatch = 2
	e := mustNew(t, cfg, &SlowBackend{})
	stop := startEngine(t, e)

	res := goDo(context.Background(), e, doc{AgentID: "a"})
	// Whether the document is still queued or already in the batch when the
	// engine stops, the caller must be answered.
	time.Sleep(50 * time.Millisecond)
	stop()
	if r := <-res; !errors.Is(r.err, ErrClosed) {
		t.Fatalf("waiting Do error = %v, want ErrClosed", r.err)
	}
	if _, err := e.Do(context.Background(), doc{AgentID: "b"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Do after stop error = %v, want ErrClosed", err)
	}
	if err := e.Run(context.Background()); err == nil {
		t.Fatal("second Run returned nil")
	}
}

// Stopping the engine during a backend call cancels the call, and the caller
// waiting for it gets ErrClosed from the flush.
func TestEngineShutdownDuringFlush(t *testing.T) {
	b := newGateBackend()
	e := mustNew(t, testConfig(), b)
	stop := startEngine(t, e)

	res := goDo(context.Background(), e, doc{AgentID: "a"})
	backendCalled(t, b)
	stop()
	if r := <-res; !errors.Is(r.err, ErrClosed) {
		t.Fatalf("Do error = %v, want ErrClosed", r.err)
	}
}

// With one flight, a second batch waits until the first backend call has
// returned.
func TestFlightsLimitBackendCalls(t *testing.T) {
	b := newGateBackend()
	e := mustNew(t, testConfig(), b)
	startEngine(t, e)

	first := goDo(context.Background(), e, doc{AgentID: "a"})
	backendCalled(t, b)
	second := goDo(context.Background(), e, doc{AgentID: "b"})
	select {
	case <-b.called:
		t.Fatal("second backend call started while the first held the only slot")
	case r := <-second:
		t.Fatalf("second Do returned early: %+v", r)
	default:
	}
	b.release <- struct{}{}
	if r := <-first; r.err != nil {
		t.Fatalf("first Do: %v", r.err)
	}
	backendCalled(t, b)
	b.release <- struct{}{}
	if r := <-second; r.err != nil {
		t.Fatalf("second Do: %v", r.err)
	}
}

func TestSlowBackendHonoursTimeout(t *testing.T) {
	b := &SlowBackend{Latency: time.Hour, Timeout: time.Millisecond}
	_, err := b.Bulk(context.Background(), [][]byte{[]byte("{}")})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Bulk error = %v, want a deadline error", err)
	}
}

func TestSlowBackendSequence(t *testing.T) {
	b := &SlowBackend{}
	first, err := b.Bulk(context.Background(), [][]byte{[]byte("ab"), []byte("c")})
	if err != nil || first != 1 {
		t.Fatalf("first call = %d, %v", first, err)
	}
	first, err = b.Bulk(context.Background(), [][]byte{[]byte("d")})
	if err != nil || first != 3 {
		t.Fatalf("second call = %d, %v", first, err)
	}
	if b.Bytes() != 4 {
		t.Errorf("bytes = %d, want 4", b.Bytes())
	}
}
