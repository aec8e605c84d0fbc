package bulk

import (
	"bytes"
	"sync"
)

// blkBufSize is the capacity a new bulk object's buffer starts with: a full
// 8 KiB payload of plain text fits once JSON-encoded; one that needs escaping
// (each <, > or & takes 6 bytes) can still make the buffer grow.
const blkBufSize = 16 << 10

// respT is what a flush hands back to the caller waiting on a bulk object.
// It exists so that one value carries both the backend's answer and its error
// across the object's response channel.
type respT struct {
	seq uint64
	err error
}

// bulkT is one queued request: the encoded document plus the channel on which
// the flush that carries it answers. Objects are pooled because every
// check-in needs one and its buffer is large; reusing them keeps the
// allocation rate flat under steady load.
type bulkT struct {
	buf *bytes.Buffer
	// ch carries the flush's answer back to the caller that dispatched the
	// object.
	ch chan respT
}

// newBulkT allocates a fresh object with its buffer already grown, so that
// encoding a document never reallocates. It is the pool's New.
func newBulkT() *bulkT {
	return &bulkT{
		buf: bytes.NewBuffer(make([]byte, 0, blkBufSize)),
		ch:  make(chan respT),
	}
}

// reset clears the object for its next user. Its buffer keeps its capacity.
func (blk *bulkT) reset() {
	blk.buf.Reset()
}

// blkPool is a sync.Pool of *bulkT that counts the objects it had to create,
// so that pool misses can be read from the engine's statistics.
type blkPool struct {
	pool  sync.Pool
	stats *Stats
}

func (p *blkPool) init(stats *Stats) {
	p.stats = stats
	p.pool.New = func() any {
		p.stats.Allocs.Add(1)
		return newBulkT()
	}
}

// newBlk takes an object from the pool (or allocates one).
func (e *Engine) newBlk() *bulkT {
	return e.pool.pool.Get().(*bulkT)
}

// freeBlk resets an object and returns it to the pool. Only an owner that
// knows no flush or Run loop still refers to blk may call it.
func (e *Engine) freeBlk(blk *bulkT) {
	blk.reset()
	e.stats.Frees.Add(1)
	if e.hooks.freed != nil {
		e.hooks.freed(blk)
	}
	e.pool.pool.Put(blk)
}
