package bulk

import (
	"errors"
	"fmt"
	"time"
)

// Config sizes the engine. It exists so that the service's flags, the tests
// and the benchmarks can each build an engine with the shape they need.
type Config struct {
	// FlushInterval is how long a partial batch may wait for more objects
	// before it is flushed anyway.
	FlushInterval time.Duration
	// MaxBatch is the number of objects that makes a batch full.
	MaxBatch int
	// QueueSize is the capacity of the channel between callers and Run.
	QueueSize int
	// Flights is how many flushes may call the backend at the same time.
	Flights int
	// BackendTimeout bounds each backend call.
	BackendTimeout time.Duration
}

// DefaultConfig returns the configuration the service starts with.
func DefaultConfig() Config {
	return Config{
		FlushInterval:  50 * time.Millisecond,
		MaxBatch:       32,
		QueueSize:      32,
		Flights:        2,
		BackendTimeout: 2 * time.Second,
	}
}

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	switch {
	case c.FlushInterval <= 0:
		return errors.New("bulk: flush interval must be positive")
	case c.MaxBatch < 1:
		return fmt.Errorf("bulk: max batch %d must be at least 1", c.MaxBatch)
	case c.QueueSize < 0:
		return fmt.Errorf("bulk: queue size %d must not be negative", c.QueueSize)
	case c.Flights < 1:
		return fmt.Errorf("bulk: flights %d must be at least 1", c.Flights)
	case c.BackendTimeout <= 0:
		return errors.New("bulk: backend timeout must be positive")
	}
	return nil
}
