package bulk

import (
	"context"
	"errors"
)

// flush sends one batch to the backend and answers every object in it, in
// batch order. It holds one of the engine's slots for the backend call only.
func (e *Engine) flush(ctx context.Context, batch []*bulkT) {
	defer e.flights.Done()

	docs := make([][]byte, len(batch))
	for i, blk := range batch {
		docs[i] = blk.buf.Bytes()
	}

	callCtx, cancel := context.WithTimeout(ctx, e.cfg.BackendTimeout)
	first, err := e.backend.Bulk(callCtx, docs)
	cancel()
	<-e.slots
	e.stats.Flushes.Add(1)

	switch {
	case err == nil:
	case ctx.Err() != nil:
		err = ErrClosed
	case errors.Is(err, context.DeadlineExceeded):
		err = ErrBackendTimeout
	}

	for i, blk := range batch {
		resp := respT{err: err}
		if err == nil {
			resp.seq = first + uint64(i)
		}
		blk.ch <- resp
	}
}
