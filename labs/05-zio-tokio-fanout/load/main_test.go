package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"leaklab.dev/loadkit"
)

// replayServer answers /replay with the asked-for number of lines, and counts
// the requests and the most seen in flight at once.
type replayServer struct {
	requests    atomic.Int64
	inflight    atomic.Int64
	maxInflight atomic.Int64
	delay       time.Duration
	status      int
	short       bool // send one line fewer than asked for
}

func (s *replayServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	now := s.inflight.Add(1)
	defer s.inflight.Add(-1)
	for {
		top := s.maxInflight.Load()
		if now <= top || s.maxInflight.CompareAndSwap(top, now) {
			break
		}
	}
	if s.delay > 0 {
		select {
		case <-time.After(s.delay):
		case <-r.Context().Done():
			return
		}
	}
	if s.status != 0 && s.status != http.StatusOK {
		http.Error(w, "no", s.status)
		return
	}
	count, err := strconv.Atoi(r.URL.Query().Get("count"))
	if err != nil || r.URL.Path != "/replay" {
		http.Error(w, "bad", http.StatusBadRequest)
		return
	}
	if s.short {
		count--
	}
	for i := range count {
		fmt.Fprintf(w, "{\"seq\":%d}\n", i)
	}
}

func testConfig(t *testing.T, url string, extra ...string) config {
	t.Helper()
	args := append([]string{"-url", url, "-players", "4", "-events-per-player", "8", "-count", "5", "-matches", "3"}, extra...)
	cfg, err := parseFlags(args, io.Discard)
	if err != nil {
		t.Fatalf("parseFlags: %v", err)
	}
	return cfg
}

// finalLine is the final line's keys these tests read.
type finalLine struct {
	Done                                       bool
	Sent, OK, Errors, Aborted, Skipped, Events int64
	P50                                        float64 `json:"p50_ms"`
	P99                                        float64 `json:"p99_ms"`
	Max                                        float64 `json:"max_ms"`
	Stopped                                    string
}

// run drives one load with generate and returns its final line; out, unless nil,
// gets every line.
func run(t *testing.T, ctx context.Context, cfg config, out *bytes.Buffer) finalLine {
	t.Helper()
	var lines bytes.Buffer
	if err := generate(ctx, cfg, &lines, io.Discard); err != nil {
		t.Fatal(err)
	}
	if out != nil {
		out.Write(lines.Bytes())
	}
	_, final := decodeLines(t, lines.Bytes())
	return final
}

// decodeLines checks every output line is JSON and returns the last one.
func decodeLines(t *testing.T, out []byte) (progress int, final finalLine) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(out))
	var last []byte
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON line: %q", sc.Text())
		}
		if _, ok := m["done"]; !ok {
			progress++
		}
		last = append(last[:0], sc.Bytes()...)
	}
	if err := json.Unmarshal(last, &final); err != nil || !final.Done {
		t.Fatalf("last line is not the final line: %q", last)
	}
	return progress, final
}

func TestMaxRequestsBoundsTheRun(t *testing.T) {
	srv := &replayServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	cfg := testConfig(t, ts.URL, "-rate", "1000", "-duration", "5s", "-max-requests", "7")
	var out bytes.Buffer
	begin := time.Now()
	final := run(t, context.Background(), cfg, &out)
	if took := time.Since(begin); took > 2*time.Second {
		t.Errorf("a 7-request run took %v", took)
	}
	if final.Sent != 7 || final.OK != 7 || srv.requests.Load() != 7 {
		t.Errorf("sent %d ok %d served %d, want 7", final.Sent, final.OK, srv.requests.Load())
	}
	if final.Events != 35 || final.Stopped != "max-requests" {
		t.Errorf("events %d stopped %q, want 35 and max-requests", final.Events, final.Stopped)
	}
	if _, last := decodeLines(t, out.Bytes()); last.OK != 7 {
		t.Errorf("printed final line says ok=%d", last.OK)
	}
}

func TestRateIsHeld(t *testing.T) {
	srv := &replayServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	cfg := testConfig(t, ts.URL, "-rate", "100", "-duration", "1500ms")
	var out bytes.Buffer
	final := run(t, context.Background(), cfg, &out)
	// 100/s for 1.5 s is 150 requests: the open loop sends what is due, no more.
	if final.Sent < 140 || final.Sent > 150 {
		t.Errorf("sent %d requests at 100/s over 1.5 s, want 140..150", final.Sent)
	}
	if final.Errors != 0 || final.OK != final.Sent || final.Stopped != "duration" {
		t.Errorf("ok %d errors %d stopped %q", final.OK, final.Errors, final.Stopped)
	}
	if final.P50 <= 0 || final.P99 < final.P50 || final.Max < final.P99 {
		t.Errorf("percentiles p50 %v p99 %v max %v", final.P50, final.P99, final.Max)
	}
	if progress, _ := decodeLines(t, out.Bytes()); progress < 1 {
		t.Errorf("%d progress lines over 1.5 s, want at least 1", progress)
	}
}

func TestConcurrencyCapSkipsInsteadOfQueueing(t *testing.T) {
	srv := &replayServer{delay: 400 * time.Millisecond}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	cfg := testConfig(t, ts.URL, "-rate", "200", "-duration", "300ms", "-concurrency", "3")
	final := run(t, context.Background(), cfg, nil)
	if srv.maxInflight.Load() > 3 {
		t.Errorf("server saw %d requests at once, cap is 3", srv.maxInflight.Load())
	}
	if final.Skipped == 0 || final.Sent+final.Skipped != 60 {
		t.Errorf("sent %d skipped %d, want 60 due with some skipped", final.Sent, final.Skipped)
	}
}

func TestBadResponsesAreErrors(t *testing.T) {
	for name, srv := range map[string]*replayServer{
		"status 500": {status: http.StatusInternalServerError},
		"short body": {short: true},
	} {
		t.Run(name, func(t *testing.T) {
			ts := httptest.NewServer(srv)
			defer ts.Close()
			cfg := testConfig(t, ts.URL, "-rate", "100", "-duration", "1s", "-max-requests", "4")
			final := run(t, context.Background(), cfg, nil)
			if final.Errors != 4 || final.OK != 0 || final.Events != 0 {
				t.Errorf("errors %d ok %d events %d, want 4 0 0", final.Errors, final.OK, final.Events)
			}
		})
	}
}

func TestTimeoutAborts(t *testing.T) {
	srv := &replayServer{delay: time.Second}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	cfg := testConfig(t, ts.URL, "-rate", "100", "-duration", "1s", "-max-requests", "3", "-timeout", "50ms")
	final := run(t, context.Background(), cfg, nil)
	if final.Aborted != 3 {
		t.Errorf("aborted %d, want 3", final.Aborted)
	}
}

func TestCancelStopsPromptly(t *testing.T) {
	srv := &replayServer{delay: 10 * time.Second}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	cfg := testConfig(t, ts.URL, "-rate", "50", "-duration", "1m", "-timeout", "30s")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	begin := time.Now()
	var final finalLine
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); final = run(t, ctx, cfg, nil) }()
	wg.Wait()
	if took := time.Since(begin); took > 200*time.Millisecond+loadkit.SignalGrace+time.Second {
		t.Errorf("stopping took %v", took)
	}
	if final.Stopped != "signal" || final.Sent == 0 || final.Aborted != final.Sent {
		t.Errorf("stopped %q sent %d aborted %d", final.Stopped, final.Sent, final.Aborted)
	}
}

func TestFlagsRefuseBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"-url", "http://example.com:80"},
		{"-url", "https://127.0.0.1:1"},
		{"-rate", "0"},
		{"-duration", "0s"},
		{"-count", "0"},
		{"-count", "20000", "-players", "2", "-events-per-player", "3"},
		{"extra"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

func TestTargetsStayInsideTheMatch(t *testing.T) {
	cfg := testConfig(t, "http://127.0.0.1:1")
	g := &generator{cfg: cfg}
	seen := map[string]bool{}
	for n := range int64(500) {
		u := g.target(n)
		seen[u] = true
		var m, from, count int
		if _, err := fmt.Sscanf(u, "http://127.0.0.1:1/replay?match=%d&from=%d&count=%d", &m, &from, &count); err != nil {
			t.Fatalf("target %q: %v", u, err)
		}
		if m < 0 || m >= cfg.matches || from < 0 || from+count > cfg.perMatch || count != cfg.count {
			t.Fatalf("target %q out of range", u)
		}
	}
	if len(seen) < 20 {
		t.Errorf("only %d distinct targets in 500", len(seen))
	}
}
