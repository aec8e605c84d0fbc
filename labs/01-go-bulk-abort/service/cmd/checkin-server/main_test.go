package main

import (
	"io"
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
	if rec := get("/nope"); rec.Code != http.StatusNotFound {
		t.Errorf("unknown route = %d", rec.Code)
	}
}
