package loadkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var testLimits = Limits{Rate: 5000, Duration: 10 * time.Minute, Requests: 2_000_000, Concurrency: 4096}

func parsePace(args ...string) (Pace, string, error) {
	p := Pace{Rate: 400, Duration: time.Minute, Concurrency: 512}
	var base string
	fs := NewFlags(io.Discard)
	fs.URL(&base, "http://127.0.0.1:8080")
	fs.Pace(&p, "requests", testLimits)
	return p, base, fs.Parse(args)
}

func TestPaceDefaultsAndTheRequestCap(t *testing.T) {
	p, base, err := parsePace()
	if err != nil || base != "http://127.0.0.1:8080" || p.Max != 24000 || p.Concurrency != 512 {
		t.Fatalf("defaults: %+v %q %v", p, base, err)
	}
	// rate*duration past the cap is the cap.
	if p, _, err := parsePace("-rate", "5000", "-duration", "10m"); err != nil || p.Max != 2_000_000 {
		t.Errorf("max = %d (%v), want the cap", p.Max, err)
	}
	if p, _, err := parsePace("-rate", "0.5", "-duration", "1s"); err != nil || p.Max != 1 {
		t.Errorf("max = %d (%v), want at least 1", p.Max, err)
	}
}

func TestURLIsLoopbackWithoutTrailingSlash(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1:9000":      "http://127.0.0.1:9000",
		"http://localhost:9000/":     "http://localhost:9000",
		"http://[::1]:9000/svc":      "http://[::1]:9000/svc",
		"http://127.0.0.5:9000/svc/": "http://127.0.0.5:9000/svc",
	} {
		if _, got, err := parsePace("-url", raw); err != nil || got != want {
			t.Errorf("%s: %q (%v), want %q", raw, got, err, want)
		}
	}
}

func TestFlagsRefuseOutOfBounds(t *testing.T) {
	for _, args := range [][]string{
		{"-url", "http://10.0.0.1:8080"},
		{"-url", "http://example.com"},
		{"-url", "https://127.0.0.1"},
		{"-url", ""},
		{"-url", "http://127.0.0.1/?q=1"},
		{"-rate", "0"},
		{"-rate", "5001"},
		{"-duration", "0s"},
		{"-duration", "11m"},
		{"-max-requests", "-1"},
		{"-max-requests", "2000001"},
		{"-concurrency", "0"},
		{"-concurrency", "4097"},
		{"-rate", "abc"},
		{"-nope"},
		{"extra"},
	} {
		if _, _, err := parsePace(args...); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: err = %v, want one line", args, err)
		}
	}
}

func TestMainExitCodes(t *testing.T) {
	parse := func(args []string, stderr io.Writer) (Pace, error) {
		p := Pace{Rate: 1, Duration: time.Second, Concurrency: 1}
		fs := NewFlags(stderr)
		fs.Pace(&p, "requests", testLimits)
		return p, fs.Parse(args)
	}
	ok := func(context.Context, Pace, io.Writer, io.Writer) error { return nil }
	failed := func(context.Context, Pace, io.Writer, io.Writer) error { return errors.New("boom") }
	for _, c := range []struct {
		args   []string
		run    func(context.Context, Pace, io.Writer, io.Writer) error
		code   int
		stderr string
	}{
		{nil, ok, 0, ""},
		{[]string{"-h"}, ok, 0, "-rate"},
		{[]string{"-rate", "0"}, ok, 2, "load: -rate 0: must be above 0 and at most 5000\n"},
		{nil, failed, 1, "load: boom\n"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(c.args, &stdout, &stderr, parse, c.run); code != c.code || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("%q: exit %d, stderr %q; want %d, %q", c.args, code, stderr.String(), c.code, c.stderr)
		}
	}
}

// SIGTERM ends the run's context (it does not kill the program): the run stops and
// still prints its final line.
func TestSIGTERMEndsTheRunsContext(t *testing.T) {
	parse := func([]string, io.Writer) (struct{}, error) { return struct{}{}, nil }
	var out bytes.Buffer
	code := Main(nil, &out, io.Discard, parse, func(ctx context.Context, _ struct{}, stdout, _ io.Writer) error {
		var st Stats
		rep := NewReport(stdout, &st)
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
			return err
		}
		stop := Pace{Rate: 10, Duration: time.Minute}.Run(ctx, rep, func(int64) {})
		if stop != StopSignal {
			t.Errorf("stopped by %q", stop)
		}
		return rep.Final(Field{"stopped", stop})
	})
	if code != 0 || !strings.Contains(out.String(), `"done":true`) {
		t.Errorf("exit %d, output %q", code, out.String())
	}
}

func TestPaceBoundsAndStops(t *testing.T) {
	for _, c := range []struct {
		pace  Pace
		want  int64
		stop  Stop
		atMin time.Duration
	}{
		{Pace{Rate: 1000, Duration: 5 * time.Second, Max: 7}, 7, StopMaxRequests, 0},
		{Pace{Rate: 100, Duration: 200 * time.Millisecond}, 20, StopDuration, 200 * time.Millisecond},
		// Held: all started, then on to the end of the duration.
		{Pace{Rate: 1000, Duration: 300 * time.Millisecond, Max: 5, Hold: true}, 5, StopDuration, 300 * time.Millisecond},
	} {
		var st Stats
		var started []int64
		begin := time.Now()
		stop := c.pace.Run(context.Background(), NewReport(io.Discard, &st), func(n int64) { started = append(started, n) })
		took := time.Since(begin)
		if int64(len(started)) != c.want || stop != c.stop || took < c.atMin || took > c.atMin+time.Second {
			t.Errorf("%+v: started %d, stop %q after %v; want %d, %q", c.pace, len(started), stop, took, c.want, c.stop)
		}
		for i, n := range started {
			if n != int64(i) {
				t.Fatalf("%+v: started %v, want 0, 1, 2, ...", c.pace, started)
			}
		}
	}
}

func TestAFullGateSkipsInsteadOfQueueing(t *testing.T) {
	var st Stats
	req := st.Requests()
	gate := &Gate{Limit: 2}
	release := make(chan struct{})
	var ran atomic.Int64
	for range 5 {
		req.Start(gate, func() { ran.Add(1); <-release })
	}
	if req.Sent.Load() != 2 || req.Skipped.Load() != 3 || gate.Inflight() != 2 {
		t.Errorf("sent %d skipped %d inflight %d, want 2 3 2", req.Sent.Load(), req.Skipped.Load(), gate.Inflight())
	}
	if gate.Wait(context.Background(), 50*time.Millisecond, nil) {
		t.Error("Wait reported done with two goroutines blocked")
	}
	close(release)
	if !gate.Wait(context.Background(), time.Second, nil) || ran.Load() != 2 {
		t.Errorf("after release: ran %d", ran.Load())
	}
}

func TestASignalCutsTheWait(t *testing.T) {
	var gate Gate
	gate.Go(func() { time.Sleep(5 * time.Second) }) // a request that outlasts the grace
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	begin := time.Now()
	gate.Wait(ctx, 10*time.Second, nil)
	if took := time.Since(begin); took > SignalGrace+500*time.Millisecond {
		t.Errorf("waited %v after the context ended", took)
	}
}

// The protocol's lines, to the byte: counters in declaration order, a gauge in the
// progress lines only, a Func in both, the final line's extras last.
func TestLines(t *testing.T) {
	var st Stats
	req := st.Requests()
	st.Gauge("inflight", func() int64 { return 1 })
	st.Func("open", func() int64 { return 4 })
	req.Sent.Store(5)
	req.Aborted.Store(1)
	req.Errors.Store(1)
	req.Skipped.Store(2)
	req.RecordOK(30 * time.Millisecond)
	req.RecordOK(10 * time.Millisecond)
	var out bytes.Buffer
	rep := NewReport(&out, &st)
	rep.start = time.Now().Add(-1500 * time.Millisecond)
	rep.Progress()
	lat := req.Latency()
	if err := rep.Final(Field{"p50_ms", lat.P50}, Field{"max_ms", lat.Max}, Field{"stopped", StopDuration}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	progress := `{"t_s":1.5,"sent":5,"ok":2,"errors":1,"aborted":1,"skipped":2,"inflight":1,"open":4}`
	final := `{"done":true,"t_s":1.5,"sent":5,"ok":2,"errors":1,"aborted":1,"skipped":2,"open":4,"p50_ms":10,"max_ms":30,"stopped":"duration"}`
	if len(lines) != 3 || lines[0] != progress || lines[1] != final {
		t.Errorf("lines = %q,\nwant %s and %s", lines, progress, final)
	}
}

func TestPercentile(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
	}
	for _, c := range []struct {
		in      []float64
		p, want float64
	}{
		{nil, 50, 0},
		{[]float64{7}, 99, 7},
		{[]float64{1, 2}, 50, 1},
		{[]float64{1, 2, 3, 4, 5}, 50, 3},
		{hundred, 0, 1},
		{hundred, 50, 50},
		{hundred, 99, 99},
		{hundred, 100, 100},
		{append(hundred, 1000), 99, 100},
	} {
		if got := percentile(c.in, c.p); got != c.want {
			t.Errorf("percentile(%d values, %v) = %v, want %v", len(c.in), c.p, got, c.want)
		}
	}
}

func TestHelpIsErrHelp(t *testing.T) {
	var stderr bytes.Buffer
	if _, _, err := parsePace("-h"); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
	fs := NewFlags(&stderr)
	fs.Int("n", 1, "a number")
	_ = fs.Parse([]string{"-help"})
	if !strings.Contains(stderr.String(), "a number") {
		t.Errorf("-help printed %q", stderr.String())
	}
}

func TestDisturbIsOneLineWithTheSecondsToLeaveOut(t *testing.T) {
	var out bytes.Buffer
	rep := NewReport(&out, &Stats{})
	rep.start = time.Now().Add(-30 * time.Second)
	rep.Disturb(5 * time.Second)
	var line map[string]float64
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatalf("%q: %v", out.String(), err)
	}
	if len(line) != 2 || line["disturb_s"] != 5 || line["t_s"] < 30 || line["t_s"] > 31 {
		t.Errorf("line = %q, want t_s about 30 and disturb_s 5 only", out.String())
	}
}
