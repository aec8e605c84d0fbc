package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeService answers publishes like the service (202 accepted, or 503 dropped)
// and serves a histogram; it has no WebSocket endpoint.
func fakeService(t *testing.T, published *atomic.Int64) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /events/{event}/locations", func(w http.ResponseWriter, r *http.Request) {
		var l location
		if err := json.NewDecoder(r.Body).Decode(&l); err != nil || l.Skater == "" {
			http.Error(w, "bad location", http.StatusBadRequest)
			return
		}
		if published.Add(1)%2 == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"error":"location dropped: the event did not take it"}`)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"status":"accepted"}`)
	})
	mux.HandleFunc("GET /debug/class-histogram", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, " num     #instances         #bytes  class name\n")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// line is the part of a progress line these tests read.
type line struct {
	Done                                bool
	Sent, OK, Accepted, Dropped, Errors int64
	Histogram                           *bool
	HistogramsDuring                    *int `json:"histograms_during"`
}

func TestRunPublishesAtTheRateAndStops(t *testing.T) {
	var published atomic.Int64
	srv := fakeService(t, &published)
	hist := filepath.Join(t.TempDir(), "h.txt")
	var out, errOut bytes.Buffer
	code := run([]string{"-url", srv.URL, "-watched", "", "-rate", "200", "-duration", "1s", "-histogram-out", hist}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var final line
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &final); err != nil || !final.Done {
		t.Fatalf("last line is not a final progress line: %q (%v)", lines[len(lines)-1], err)
	}
	if final.Sent != 200 || final.OK != 200 || final.Accepted != 100 || final.Dropped != 100 || final.Errors != 0 {
		t.Errorf("final = %+v, want 200 sent, 200 ok, 100 accepted, 100 dropped", final)
	}
	if final.Histogram == nil || !*final.Histogram {
		t.Errorf("histogram not saved: %+v", final)
	}
	if _, err := os.Stat(hist); err != nil {
		t.Error(err)
	}
}

func TestHistogramsDuringTheLoadAreSavedBesideTheAfterLoadOne(t *testing.T) {
	var published atomic.Int64
	srv := fakeService(t, &published)
	hist := filepath.Join(t.TempDir(), "histogram-after-load.txt")
	var out, errOut bytes.Buffer
	code := run([]string{"-url", srv.URL, "-watched", "", "-rate", "50", "-duration", "1s",
		"-histogram-out", hist, "-histogram-during", "300ms,0.6s,5s"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var final line
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &final); err != nil || final.HistogramsDuring == nil || *final.HistogramsDuring != 2 {
		t.Fatalf("final = %q (%v), want histograms_during 2 (5s is past the end)", lines[len(lines)-1], err)
	}
	for _, name := range []string{"histogram-during-300ms.txt", "histogram-during-0.6s.txt"} {
		if _, err := os.Stat(filepath.Join(filepath.Dir(hist), name)); err != nil {
			t.Error(err)
		}
	}
	if code := run([]string{"-url", srv.URL, "-histogram-during", "30s"}, &out, &errOut); code != 2 {
		t.Errorf("-histogram-during without -histogram-out: exit %d, want 2", code)
	}
}

func TestSubscriberFailureIsCountedNotFatal(t *testing.T) {
	var published atomic.Int64
	srv := fakeService(t, &published)
	var out, errOut bytes.Buffer
	if code := run([]string{"-url", srv.URL, "-rate", "50", "-duration", "200ms"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), `"subscriber_errors":1`) {
		t.Errorf("the failed subscription is not counted: %s", out.String())
	}
}

func TestFlagsAreChecked(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-url", "http://127.0.0.1:1", "-rate", "0"},
		{"-url", "http://127.0.0.1:1", "-watched", "elsewhere"},
		{"-url", "http://127.0.0.1:1", "-duration", "1h"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted bad flags", args)
		}
	}
}

func TestTrimHistogramKeepsTopStreamClassesAndTotal(t *testing.T) {
	var full strings.Builder
	for i := range 300 {
		fmt.Fprintf(&full, "%4d: 1 16 some.Class%d\n", i, i)
	}
	full.WriteString(" 301: 5 80 org.apache.pekko.stream.scaladsl.MergeHub$$anon$2\nTotal 305 4880\n")
	got := string(trimHistogram([]byte(full.String())))
	for _, want := range []string{"some.Class0\n", "some.Class101\n", "MergeHub", "Total 305"} {
		if !strings.Contains(got, want) {
			t.Errorf("trimmed histogram lacks %q", want)
		}
	}
	if strings.Contains(got, "some.Class200\n") {
		t.Error("trimmed histogram keeps the long tail")
	}
}
