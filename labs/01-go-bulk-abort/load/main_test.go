package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseFlagsDefaults(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.target != "http://127.0.0.1:8080/checkin" || c.pace.Rate != 400 || c.pace.Duration != time.Minute ||
		c.pace.Max != 24000 || c.pace.Concurrency != 512 || c.timeout != 300*time.Millisecond || c.payloadBytes != 4096 {
		t.Errorf("defaults = %+v", c)
	}
}

func TestParseFlagsURL(t *testing.T) {
	// The check-in endpoint under the base URL, with or without a path and a slash.
	for base, want := range map[string]string{
		"http://127.0.0.1:9000":      "http://127.0.0.1:9000/checkin",
		"http://localhost:9000/":     "http://localhost:9000/checkin",
		"http://127.0.0.5:9000/svc/": "http://127.0.0.5:9000/svc/checkin",
	} {
		c, err := parseFlags([]string{"-url", base}, io.Discard)
		if err != nil {
			t.Errorf("%s: %v", base, err)
			continue
		}
		if c.target != want {
			t.Errorf("%s: target = %s, want %s", base, c.target, want)
		}
	}
}

func TestParseFlagsRejects(t *testing.T) {
	// This lab's bounds (the kit's tests cover -url and the command line itself).
	for _, args := range [][]string{
		{"-rate", "0"},
		{"-rate", "5001"},
		{"-duration", "0s"},
		{"-duration", "11m"},
		{"-max-requests", "-1"},
		{"-max-requests", "2000001"},
		{"-concurrency", "-1"},
		{"-concurrency", "4097"},
		{"-retries", "-1"},
		{"-retries", "21"},
		{"-retry-backoff", "0s"},
		{"-retry-backoff-max", "0s"},
		{"-timeout", "0s"},
		{"-payload-bytes", "8193"},
		{"-impatient", "-0.1"},
		{"-impatient", "1.5"},
		{"-impatient-timeout", "0s"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

// A short run against a test server that answers some requests, fails some
// and is too slow for others.
func TestGenerate(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]string
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body["agent_id"] == "" || len(body["payload"]) != 16 {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		switch body["agent_id"] {
		case "load-agent-000":
			select { // slower than the client's timeout
			case <-r.Context().Done():
			case <-release:
			}
		case "load-agent-001":
			http.Error(w, "nope", http.StatusServiceUnavailable)
		default:
			w.Write([]byte(`{"ok":true}`))
		}
	}))
	defer srv.Close()
	defer close(release)

	final := runLoad(t, "-url", srv.URL, "-rate", "200", "-duration", "1s", "-max-requests", "10",
		"-timeout", "100ms", "-payload-bytes", "16")
	if !final.Done || final.Sent != 10 || final.Aborted != 1 || final.Errors != 1 || final.OK != 8 || final.Skipped != 0 {
		t.Errorf("final = %+v", final)
	}
}

func TestImpatientShareIsExactAndSpread(t *testing.T) {
	for _, share := range []float64{0, 0.1, 0.25, 1} {
		g := &generator{cfg: config{timeout: time.Second, impatient: share, impatientAfter: time.Millisecond}}
		var n, run, longestRun int
		for i := int64(0); i < 1000; i++ {
			if g.timeoutOf(i) == time.Millisecond {
				n++
				run = 0
				continue
			}
			run++
			longestRun = max(longestRun, run)
		}
		if want := int(share * 1000); n != want {
			t.Errorf("share %v: %d impatient of 1000, want %d", share, n, want)
		}
		// Spread evenly: never a gap longer than 1/share between two impatient requests.
		if share > 0 && float64(longestRun) > 1/share {
			t.Errorf("share %v: %d patient requests in a row", share, longestRun)
		}
	}
}

// finalLine is the load's last line: how the run ended.
type finalLine struct {
	Done                                        bool
	Sent, OK, Aborted, Errors, Skipped, Retries int64
}

func runLoad(t *testing.T, args ...string) finalLine {
	t.Helper()
	cfg, err := parseFlags(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := generate(context.Background(), cfg, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var final finalLine
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &final); err != nil {
		t.Fatalf("final line %q: %v", lines[len(lines)-1], err)
	}
	return final
}

func TestConcurrencyZeroIsNoCap(t *testing.T) {
	c, err := parseFlags([]string{"-concurrency", "0"}, io.Discard)
	if err != nil || c.pace.Concurrency != 0 {
		t.Fatalf("-concurrency 0: %+v, %v", c.pace, err)
	}
}

// An agent turned away (429) or timed out checks in again after its backoff
// and is answered then; every agent is answered once, whatever its first
// check-ins met.
func TestAgentsRetryAFailedCheckIn(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]string
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		seen[body["agent_id"]]++
		n := seen[body["agent_id"]]
		mu.Unlock()
		switch n {
		case 1:
			http.Error(w, "overloaded", http.StatusTooManyRequests)
		case 2:
			<-r.Context().Done() // the agent's own timeout
		default:
			w.Write([]byte(`{"ok":true}`))
		}
	}))
	defer srv.Close()

	final := runLoad(t, "-url", srv.URL, "-rate", "200", "-duration", "1s", "-max-requests", "10",
		"-timeout", "100ms", "-payload-bytes", "16", "-concurrency", "0",
		"-retries", "3", "-retry-backoff", "20ms", "-retry-backoff-max", "1s")
	if !final.Done || final.Sent != 10 || final.OK != 10 || final.Errors != 10 || final.Aborted != 10 ||
		final.Retries != 20 || final.Skipped != 0 {
		t.Errorf("final = %+v, want 10 agents each answered at its third check-in", final)
	}
}

// No retry starts once the load's duration is over: an agent still backing
// off then gives up, and the load stops by itself instead of waiting it out.
func TestNoRetryAfterTheLoadEnds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "overloaded", http.StatusTooManyRequests)
	}))
	defer srv.Close()

	begin := time.Now()
	final := runLoad(t, "-url", srv.URL, "-rate", "20", "-duration", "500ms",
		"-timeout", "100ms", "-payload-bytes", "16", "-retries", "20", "-retry-backoff", "10s")
	if took := time.Since(begin); took > 3*time.Second {
		t.Errorf("the load took %v: it waited out a backoff past its duration", took)
	}
	if final.Retries != 0 || final.OK != 0 || final.Errors != final.Sent || final.Sent == 0 {
		t.Errorf("final = %+v, want every agent's one check-in refused and no retry", final)
	}
}

// The k-th retry waits between b and 2b, b = init·2^(k-1) and at most max/2,
// as Elastic Agent's equal-jitter backoff does.
func TestBackoffDoublesWithinItsJitter(t *testing.T) {
	b := backoff{init: time.Second, max: 10 * time.Second}
	r := agentRand(7)
	for k, lo := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 5 * time.Second, 9: 5 * time.Second} {
		for range 100 {
			if d := b.wait(k, r); d < lo || d >= 2*lo {
				t.Fatalf("retry %d waited %v, want in [%v, %v)", k, d, lo, 2*lo)
			}
		}
	}
	if a, c := b.wait(1, agentRand(3)), b.wait(1, agentRand(3)); a != c {
		t.Errorf("agent 3's first wait: %v then %v, want the same in every run", a, c)
	}
}
