package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
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
	if err != nil || cfg.duration != 5*time.Second || cfg.clients != 300 {
		t.Fatalf("defaults: %+v, %v", cfg, err)
	}
}

func TestFinalLineIsMarkedDone(t *testing.T) {
	var st stats
	st.sent.Add(3)
	st.ok.Add(2)
	line, err := json.Marshal(st.final(1500 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"done":true`, `"t_s":1.5`, `"sent":3`, `"ok":2`} {
		if !strings.Contains(string(line), want) {
			t.Errorf("final line %s lacks %s", line, want)
		}
	}
}

func TestWSURL(t *testing.T) {
	if got := wsURL("http://127.0.0.1:4000"); got != "ws://127.0.0.1:4000/socket" {
		t.Errorf("wsURL = %q", got)
	}
}
