// Command checkin-server serves agent check-ins through the bulk engine, with
// a slow fake backend behind it, and exposes expvar and pprof on the same
// loopback listener.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"leaklab.dev/bulkabort/bulk"
	"leaklab.dev/bulkabort/checkin"
)

// shutdownTimeout bounds each shutdown step: draining HTTP requests, then
// waiting for the engine's flushes.
const shutdownTimeout = 5 * time.Second

// timeouts bound how long a client may hold a connection without sending
// what the server waits for.
type timeouts struct {
	// readHeader bounds reading a request's headers.
	readHeader time.Duration
	// read bounds reading a whole request, headers and body. A check-in body
	// is at most 64 KiB; a client that stops halfway is cut off here.
	read time.Duration
	// idle bounds the wait for the next request on a kept-alive connection.
	idle time.Duration
}

// defaultTimeouts are the server's. There is no WriteTimeout: it would run
// from the end of the headers and so have to outlast the slowest check-in
// (queueing plus a backend call of up to -backend-timeout), and the pprof
// CPU profile and trace stream for 30 s by default. A check-in's answer is
// a few bytes, which the socket buffer takes at once.
var defaultTimeouts = timeouts{
	readHeader: 5 * time.Second,
	read:       10 * time.Second,
	// Longer than the load's 30 s IdleConnTimeout, so that the client, not
	// the server, closes an idle connection and never reuses one that the
	// server is closing.
	idle: 60 * time.Second,
}

// options holds the parsed command line.
type options struct {
	listen         string
	backendLatency time.Duration
	cfg            bulk.Config
}

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	logger := log.New(stderr, "checkin-server: ", log.LstdFlags)
	opts, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "checkin-server: %v\n", err)
		return 2
	}
	if err := serve(opts, logger); err != nil {
		logger.Print(err)
		return 1
	}
	return 0
}

// parseFlags parses and validates the command line.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	def := bulk.DefaultConfig()
	var o options
	fs := flag.NewFlagSet("checkin-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "loopback `host:port` to listen on (port 0 picks a free port)")
	fs.DurationVar(&o.backendLatency, "backend-latency", 200*time.Millisecond, "time the fake backend takes per bulk call")
	fs.DurationVar(&o.cfg.BackendTimeout, "backend-timeout", def.BackendTimeout, "timeout of each backend call")
	fs.DurationVar(&o.cfg.FlushInterval, "flush-interval", def.FlushInterval, "longest a partial batch waits before it is flushed")
	fs.IntVar(&o.cfg.MaxBatch, "max-batch", def.MaxBatch, "objects per full batch")
	fs.IntVar(&o.cfg.QueueSize, "queue", def.QueueSize, "capacity of the engine's queue")
	fs.IntVar(&o.cfg.Flights, "flights", def.Flights, "concurrent backend calls")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := checkLoopback(o.listen); err != nil {
		return o, err
	}
	if o.backendLatency < 0 {
		return o, errors.New("-backend-latency must not be negative")
	}
	if err := o.cfg.Validate(); err != nil {
		return o, err
	}
	return o, nil
}

// checkLoopback refuses listen addresses that other machines could reach: the
// server exposes pprof and has no authentication.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-listen %q: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-listen %q: refusing to listen on a non-loopback address (use 127.0.0.1 or [::1])", addr)
	}
	return nil
}

func serve(opts options, logger *log.Logger) error {
	backend := &bulk.SlowBackend{Latency: opts.backendLatency, Timeout: opts.cfg.BackendTimeout}
	// countStored (vars.go) counts what the backend accepts, for backend_docs.
	engine, err := bulk.New(opts.cfg, countStored(backend))
	if err != nil {
		return err
	}
	counters := new(checkin.Counters)
	publishVars(engine, counters)

	ln, err := net.Listen("tcp", opts.listen)
	if err != nil {
		return err
	}
	srv := newServer(newMux(engine, counters), defaultTimeouts)

	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	engineCtx, stopEngine := context.WithCancel(context.Background())
	defer stopEngine()
	engineErr := make(chan error, 1)
	go func() { engineErr <- engine.Run(engineCtx) }()
	<-engine.Ready()

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	logger.Printf("listening on %s (backend latency %v, backend timeout %v, flush interval %v, max batch %d, queue %d, flights %d)",
		ln.Addr(), opts.backendLatency, opts.cfg.BackendTimeout, opts.cfg.FlushInterval,
		opts.cfg.MaxBatch, opts.cfg.QueueSize, opts.cfg.Flights)

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case err := <-engineErr:
		return fmt.Errorf("engine stopped: %w", err)
	case <-sigCtx.Done():
	}
	logger.Print("shutting down")

	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		logger.Printf("http shutdown: %v", err)
	}
	stopEngine()
	select {
	case err := <-engineErr:
		if err != nil {
			return fmt.Errorf("engine: %w", err)
		}
	case <-time.After(shutdownTimeout):
		logger.Printf("engine: flushes still running after %v; exiting anyway", shutdownTimeout)
	}
	logger.Print("stopped")
	return nil
}

// newServer returns the HTTP server for handler, with the given timeouts.
func newServer(handler http.Handler, t timeouts) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: t.readHeader,
		ReadTimeout:       t.read,
		IdleTimeout:       t.idle,
	}
}
