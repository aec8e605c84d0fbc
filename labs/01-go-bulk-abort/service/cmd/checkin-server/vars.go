package main

// This file is what the course measures the service by. It is a fixture
// (lab.toml [lab] fixtures): `leaklab grade` always builds it as published,
// whatever a learner's copy says, so a fix cannot change the figures it is
// graded on. It registers itself in init, so it does not depend on main
// calling it; only backend_docs needs main's help (countStored).

import (
	"context"
	"expvar"
	"runtime"
	"runtime/metrics"
	"sync/atomic"

	"leaklab.dev/bulkabort/bulk"
)

// storedDocs counts the documents a backend accepted: what the grade compares
// with the agents that were answered.
var storedDocs atomic.Uint64

func init() {
	expvar.Publish("goroutines", expvar.Func(func() any { return runtime.NumGoroutine() }))
	expvar.Publish("gc_heap_live_bytes", expvar.Func(liveHeapBytes))
	expvar.Publish("backend_docs", expvar.Func(func() any { return storedDocs.Load() }))
}

// countStored wraps the service's backend so that every document a bulk call
// accepts is counted in backend_docs.
func countStored(b bulk.Backend) bulk.Backend { return storeCounter{b} }

type storeCounter struct{ bulk.Backend }

func (s storeCounter) Bulk(ctx context.Context, docs [][]byte) (uint64, error) {
	first, err := s.Backend.Bulk(ctx, docs)
	if err == nil {
		storedDocs.Add(uint64(len(docs)))
	}
	return first, err
}

// liveHeapBytes is the heap the last garbage collection found reachable: memory
// that something still refers to. Unlike HeapInuse it does not saw up and down
// with every GC cycle, so a leak shows as a rising staircase (one step per
// collection) and a fixed service as a flat line.
func liveHeapBytes() any {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return uint64(0) // not supported by this Go version
	}
	return sample[0].Value.Uint64()
}
