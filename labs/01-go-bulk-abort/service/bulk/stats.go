package bulk

import "sync/atomic"

// Stats counts what the engine does. It exists so that the service can
// publish the numbers (expvar) and tests can assert on them without reaching
// into the pool.
type Stats struct {
	// Allocs counts objects the pool had to create (pool misses).
	Allocs atomic.Uint64
	// Frees counts objects returned to the pool.
	Frees atomic.Uint64
	// Flushes counts completed backend calls.
	Flushes atomic.Uint64
}
