package bulk

import "errors"

var (
	// ErrClosed is returned by Do once the engine's Run loop has stopped.
	ErrClosed = errors.New("bulk: engine closed")
	// ErrBackendTimeout is returned by Do when the flush that carried the
	// request hit the backend timeout.
	ErrBackendTimeout = errors.New("bulk: backend timeout")
)

// AbortError reports that the caller's context ended while Do was waiting.
// It exists so that callers can tell the two places a wait can end apart:
// before the request reached the engine's queue, or after.
type AbortError struct {
	// Enqueued is true when the request was already in the engine.
	Enqueued bool
	// Err is the context's error.
	Err error
}

func (e *AbortError) Error() string {
	if e.Enqueued {
		return "bulk: aborted waiting for response: " + e.Err.Error()
	}
	return "bulk: aborted waiting for queue: " + e.Err.Error()
}

func (e *AbortError) Unwrap() error { return e.Err }
