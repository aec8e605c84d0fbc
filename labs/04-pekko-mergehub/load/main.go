// Command load drives the location service the way an event's skaters and
// viewers do: publishers POST location updates at a fixed open-loop rate,
// spread over several events, while WebSocket subscribers watch some of the
// events and not others.
//
// It stops by itself after -duration. Every second it prints one JSON line of
// cumulative counts to stdout, and one final line with "done": true. With
// -histogram-out it saves the service's class histogram the moment publishing
// ends, the "snapshot after load"; with -histogram-during also at the times given,
// while publishing goes on (histogram-during-30s.txt beside it, for 30s).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "load: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := drive(ctx, cfg, stdout); err != nil {
		fmt.Fprintf(stderr, "load: %v\n", err)
		return 1
	}
	return 0
}

// drive runs one load: subscribers first, then the publishers, then the
// after-load histogram, then the final line.
func drive(ctx context.Context, cfg config, out io.Writer) error {
	var st stats
	enc := json.NewEncoder(out)
	tr := &http.Transport{MaxIdleConns: cfg.concurrency, MaxIdleConnsPerHost: cfg.concurrency, IdleConnTimeout: 30 * time.Second}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	subCtx, cancelSubs := context.WithCancel(ctx)
	subs := &subscribers{cfg: cfg, stats: &st}
	subs.connect(subCtx)

	start := time.Now()
	during := saveHistogramsDuring(ctx, client, cfg)
	pub := &publisher{cfg: cfg, client: client, stats: &st}
	pub.run(ctx, start, func() { _ = enc.Encode(st.progress(time.Since(start))) })
	subs.close(cancelSubs)
	saved := during()

	final := st.progress(time.Since(start))
	final.Done = true
	if len(cfg.histogramsDuring) > 0 {
		final.HistogramsDuring = &saved
	}
	if cfg.histogramPath != "" {
		ok := saveHistogram(ctx, client, cfg.base, cfg.histogramPath) == nil
		final.Histogram = &ok
	}
	return enc.Encode(final)
}

// saveHistogramsDuring starts one timer per -histogram-during time; the function
// it returns waits for them (a timer not yet due is cancelled) and says how many
// histograms were saved. Each is a full GC in the service, as jcmd's is.
func saveHistogramsDuring(ctx context.Context, client *http.Client, cfg config) func() int {
	ctx, cancel := context.WithCancel(ctx)
	results := make(chan bool, len(cfg.histogramsDuring))
	due := 0
	for i, at := range cfg.histogramsDuring {
		if at >= cfg.duration {
			continue
		}
		due++
		name := fmt.Sprintf("histogram-during-%s.txt", cfg.duringNames[i])
		path := filepath.Join(filepath.Dir(cfg.histogramPath), name)
		go func() {
			select {
			case <-time.After(at):
				results <- saveHistogram(ctx, client, cfg.base, path) == nil
			case <-ctx.Done():
				results <- false
			}
		}()
	}
	return func() int {
		saved := 0
		for range due {
			if <-results {
				saved++
			}
		}
		cancel()
		return saved
	}
}

// saveHistogram writes GET /debug/class-histogram to path. A failure is
// reported in the final line, not fatal: the run's series still count.
func saveHistogram(ctx context.Context, client *http.Client, base, path string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/debug/class-histogram", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("class histogram: %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	return os.WriteFile(path, trimHistogram(body), 0o644)
}

// trimHistogram keeps what the lab reads from a class histogram (the header, the
// top 100 classes, every Pekko stream class and the total) and drops the long tail,
// the same cut lab.toml applies to the jcmd snapshot after idle.
func trimHistogram(full []byte) []byte {
	var out bytes.Buffer
	for i, line := range strings.Split(string(full), "\n") {
		if i < 102 || strings.Contains(line, "pekko.stream") || strings.HasPrefix(line, "Total") {
			out.WriteString(line)
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}
