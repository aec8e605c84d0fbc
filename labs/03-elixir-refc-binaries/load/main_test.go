package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"leaklab.dev/loadkit"
)

func TestParseFlagsRejectsOutOfBounds(t *testing.T) {
	bad := [][]string{
		{"-url", "http://example.com:80"},
		{"-clients", "0"},
		{"-rate", "0"},
		{"-duration", "11m"},
		{"-limit", "101"},
	}
	for _, args := range bad {
		if _, err := parseFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parseFlags(%q) accepted out-of-bounds input", args)
		}
	}
	cfg, err := parseFlags([]string{"-url", "http://127.0.0.1:9", "-duration", "5s"}, &bytes.Buffer{})
	if err != nil || cfg.pace.Duration != 5*time.Second || cfg.pace.Max != 300 {
		t.Fatalf("defaults: %+v, %v", cfg, err)
	}
}

// The lines carry this lab's counters, the sockets still open included in the final
// line (the kit's tests cover the protocol itself).
func TestFinalLineHasTheLabsCounters(t *testing.T) {
	var counters loadkit.Stats
	st := newStats(&counters)
	st.sent.Add(3)
	st.ok.Add(2)
	st.open.Add(1)
	var out bytes.Buffer
	if err := loadkit.NewReport(&out, &counters).Final(); err != nil {
		t.Fatal(err)
	}
	line := out.String()
	for _, want := range []string{`"done":true`, `"connected":0`, `"joined":0`, `"sent":3`, `"ok":2`, `"errors":0`, `"reply_bytes":0`, `"open":1`} {
		if !strings.Contains(line, want) {
			t.Errorf("final line %s lacks %s", line, want)
		}
	}
}

func TestWSURL(t *testing.T) {
	if got := wsURL("http://127.0.0.1:4000"); got != "ws://127.0.0.1:4000/socket" {
		t.Errorf("wsURL = %q", got)
	}
}
