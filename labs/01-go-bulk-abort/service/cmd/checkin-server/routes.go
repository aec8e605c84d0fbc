package main

import (
	"expvar"
	"net/http"
	"net/http/pprof"

	"leaklab.dev/bulkabort/bulk"
	"leaklab.dev/bulkabort/checkin"
)

// newMux wires the service's routes. The debug endpoints share the loopback
// listener so that one address is enough to load, observe and profile the
// service. Every pattern names its methods: the mux then answers a wrong
// method with 405 and an Allow header, and an unknown path with 404.
func newMux(engine *bulk.Engine, counters *checkin.Counters) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("POST /checkin", checkin.NewHandler(engine, counters))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		// Done is asked on its own first: once the engine has stopped, Ready is
		// closed too, and a select with both ready picks either at random.
		select {
		case <-engine.Done():
			http.Error(w, "engine not running", http.StatusServiceUnavailable)
			return
		default:
		}
		select {
		case <-engine.Ready():
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte("ok"))
		default:
			http.Error(w, "engine not running", http.StatusServiceUnavailable)
		}
	})

	mux.Handle("GET /debug/vars", expvar.Handler())
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	// go tool pprof posts the addresses it wants symbolised.
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// publishVars adds the service's own counters to expvar, next to the memstats
// and cmdline that the expvar package publishes itself and the measures that
// vars.go publishes (goroutines, gc_heap_live_bytes, backend_docs).
func publishVars(engine *bulk.Engine, c *checkin.Counters) {
	stats := engine.Stats()
	expvar.Publish("checkins_ok", expvar.Func(func() any { return c.OK.Load() }))
	expvar.Publish("checkins_aborted_before_enqueue", expvar.Func(func() any { return c.AbortedBeforeEnqueue.Load() }))
	expvar.Publish("checkins_aborted_after_enqueue", expvar.Func(func() any { return c.AbortedAfterEnqueue.Load() }))
	expvar.Publish("checkins_failed", expvar.Func(func() any { return c.Failed.Load() }))
	expvar.Publish("checkins_rejected", expvar.Func(func() any { return c.Rejected.Load() }))
	expvar.Publish("flushes", expvar.Func(func() any { return stats.Flushes.Load() }))
	expvar.Publish("bulk_pool_allocs", expvar.Func(func() any { return stats.Allocs.Load() }))
	expvar.Publish("bulk_pool_frees", expvar.Func(func() any { return stats.Frees.Load() }))
}
