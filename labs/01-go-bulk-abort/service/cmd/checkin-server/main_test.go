package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"leaklab.dev/bulkabort/bulk"
	"leaklab.dev/bulkabort/checkin"
)

func TestCheckLoopback(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:8080", "127.0.0.2:0", "[::1]:8080", "localhost:8080"} {
		if err := checkLoopback(ok); err != nil {
			t.Errorf("checkLoopback(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{":8080", "0.0.0.0:8080", "[::]:8080", "10.0.0.1:80", "example.com:80", "127.0.0.1"} {
		if err := checkLoopback(bad); err == nil {
			t.Errorf("checkLoopback(%q) accepted", bad)
		}
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.listen != "127.0.0.1:8080" || o.backendLatency != 200*time.Millisecond || o.cfg != bulk.DefaultConfig() {
		t.Errorf("defaults = %+v", o)
	}
	for _, args := range [][]string{
		{"-listen", "0.0.0.0:8080"},
		{"-flights", "0"},
		{"-backend-latency", "-1s"},
		{"-queue", "x"},
		{"extra"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

func TestRunRefusesNonLoopback(t *testing.T) {
	var stderr strings.Builder
	if code := run([]string{"-listen", "0.0.0.0:8080"}, &stderr); code != 2 {
		t.Fatalf("exit code = %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), "non-loopback") {
		t.Errorf("stderr = %q", stderr.String())
	}
}

func TestRoutes(t *testing.T) {
	e, err := bulk.New(bulk.DefaultConfig(), &bulk.SlowBackend{})
	if err != nil {
		t.Fatal(err)
	}
	mux := newMux(e, new(checkin.Counters))
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	if rec := get("/healthz"); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("healthz before Run = %d, want 503", rec.Code)
	}
	if rec := get("/debug/pprof/"); rec.Code != http.StatusOK {
		t.Errorf("pprof index = %d", rec.Code)
	}
	if rec := get("/debug/vars"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "memstats") {
		t.Errorf("debug/vars = %d", rec.Code)
	}
	for _, path := range []string{"/", "/nope", "/checkin/extra"} {
		if rec := get(path); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, rec.Code)
		}
	}
}

// /healthz says ok only while the engine runs: before Run, during it, and after
// it returned (asked many times, since a stopped engine is both ready and done).
func TestHealthzFollowsTheEngine(t *testing.T) {
	e, err := bulk.New(bulk.DefaultConfig(), &bulk.SlowBackend{})
	if err != nil {
		t.Fatal(err)
	}
	mux := newMux(e, new(checkin.Counters))
	healthz := func() int {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		return rec.Code
	}
	if code := healthz(); code != http.StatusServiceUnavailable {
		t.Errorf("healthz before Run = %d, want 503", code)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- e.Run(ctx) }()
	<-e.Ready()
	if code := healthz(); code != http.StatusOK {
		t.Errorf("healthz while running = %d, want 200", code)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Run: %v", err)
	}
	for i := range 100 {
		if code := healthz(); code != http.StatusServiceUnavailable {
			t.Fatalf("healthz after Run returned = %d on request %d, want 503", code, i+1)
		}
	}
}

func TestWrongMethodIs405(t *testing.T) {
	e, err := bulk.New(bulk.DefaultConfig(), &bulk.SlowBackend{})
	if err != nil {
		t.Fatal(err)
	}
	mux := newMux(e, new(checkin.Counters))
	tests := []struct {
		method, path, allow string
	}{
		{http.MethodGet, "/checkin", "POST"},
		{http.MethodPut, "/checkin", "POST"},
		{http.MethodPost, "/healthz", "GET, HEAD"},
		{http.MethodDelete, "/debug/vars", "GET, HEAD"},
		{http.MethodPost, "/debug/pprof/", "GET, HEAD"},
		{http.MethodPost, "/debug/pprof/heap", "GET, HEAD"},
		{http.MethodPost, "/debug/pprof/cmdline", "GET, HEAD"},
		{http.MethodPost, "/debug/pprof/profile", "GET, HEAD"},
		{http.MethodPost, "/debug/pprof/trace", "GET, HEAD"},
		{http.MethodDelete, "/debug/pprof/symbol", "GET, HEAD, POST"},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != tt.allow {
			t.Errorf("%s %s = %d, Allow %q; want 405, Allow %q",
				tt.method, tt.path, rec.Code, rec.Header().Get("Allow"), tt.allow)
		}
	}
}

func TestDefaultTimeoutsAreAllSet(t *testing.T) {
	d := defaultTimeouts
	if d.readHeader <= 0 || d.read < d.readHeader || d.idle <= 0 {
		t.Errorf("defaultTimeouts = %+v: every timeout must be set, and read must cover the headers", d)
	}
}

// shortTimeouts make the timeout tests quick; testDeadline is how long a test
// waits for the server before calling it a hang.
var shortTimeouts = timeouts{readHeader: 250 * time.Millisecond, read: 250 * time.Millisecond, idle: 250 * time.Millisecond}

const testDeadline = 5 * time.Second

// startServer serves the service's routes on a loopback port, with an engine
// that is not running, and returns a connection to it whose reads give up
// after testDeadline.
func startServer(t *testing.T, to timeouts) net.Conn {
	t.Helper()
	e, err := bulk.New(bulk.DefaultConfig(), &bulk.SlowBackend{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(newMux(e, new(checkin.Counters)), to)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := conn.SetReadDeadline(time.Now().Add(testDeadline)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// expectClosed fails unless the server has closed conn (EOF), or does so
// before the read deadline.
func expectClosed(t *testing.T, r io.Reader) {
	t.Helper()
	if n, err := r.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("read after the answer = %d bytes, %v; want EOF (server closed the connection)", n, err)
	}
}

func TestPartialBodyIsCutOff(t *testing.T) {
	conn := startServer(t, shortTimeouts)
	// Headers promise 100 bytes; the client sends 12 and stalls.
	start := time.Now()
	_, err := io.WriteString(conn, "POST /checkin HTTP/1.1\r\nHost: checkin\r\n"+
		"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"agent_id\":")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer within %v of a stalled body: %v", testDeadline, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "not received in time") {
		t.Errorf("answer = %d %q, want 408 and why", resp.StatusCode, body)
	}
	// The server's read deadline starts when it begins reading the request, which can
	// be a little before start (the connection was accepted earlier), so only an answer
	// far earlier than the timeout means something other than the timeout answered.
	if waited := time.Since(start); waited < shortTimeouts.read/2 {
		t.Errorf("answered after %v, long before the %v read timeout", waited, shortTimeouts.read)
	}
	expectClosed(t, br)
}

func TestIdleConnectionIsClosed(t *testing.T) {
	conn := startServer(t, shortTimeouts)
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: checkin\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	if resp.Close {
		t.Fatal("the server closed the connection after one request; nothing left to test")
	}
	// The connection is now idle, kept alive for a next request that never
	// comes.
	expectClosed(t, br)
}
