// Command load drives the location service the way an event's skaters and
// viewers do: publishers POST location updates at a fixed open-loop rate,
// spread over several events, while WebSocket subscribers watch some of the
// events and not others.
//
// It stops by itself after -duration. Every second it prints one JSON line of
// cumulative counts to stdout, and one final line with "done": true (the protocol,
// flags, bounds and pacer are leaklab.dev/loadkit's). With
// -histogram-out it saves the service's class histogram the moment publishing
// ends, the "snapshot after load"; with -histogram-during also at the times given,
// while publishing goes on (histogram-during-30s.txt beside it, for 30s).
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"leaklab.dev/loadkit"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	return loadkit.Main(args, stdout, stderr, parseFlags, drive)
}

// stats are the run's counters: the kit's requests (ok counts every answered update,
// dropped or not; aborted is an update abandoned at -timeout) and this lab's own
// (accepted counts the 202 answers as the load received them, for the grade's check).
type stats struct {
	req                                                       *loadkit.Requests
	accepted, dropped, received, subscribed, subscriberErrors *loadkit.Counter
}

func newStats(s *loadkit.Stats) *stats {
	st := &stats{req: s.Requests(), accepted: s.Counter("accepted"), dropped: s.Counter("dropped")}
	// The lab's first name for aborted, kept so older runs and the notebook compare.
	s.Func("timed_out", st.req.Aborted.Load)
	st.received = s.Counter("received")
	st.subscribed = s.Counter("subscribers")
	st.subscriberErrors = s.Counter("subscriber_errors")
	return st
}

// drive runs one load: subscribers first, then the publishers, then the
// after-load histogram, then the final line.
func drive(ctx context.Context, cfg config, out, _ io.Writer) error {
	var counters loadkit.Stats
	st := newStats(&counters)
	conc := cfg.pace.Concurrency
	tr := &http.Transport{MaxIdleConns: conc, MaxIdleConnsPerHost: conc, IdleConnTimeout: 30 * time.Second}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	subCtx, cancelSubs := context.WithCancel(ctx)
	subs := &subscribers{cfg: cfg, stats: st}
	subs.connect(subCtx)

	rep := loadkit.NewReport(out, &counters)
	during := saveHistogramsDuring(ctx, client, cfg, rep)
	pub := &publisher{cfg: cfg, client: client, stats: st}
	pub.run(ctx, rep)
	subs.close(cancelSubs)
	saved := during()

	var extra []loadkit.Field
	if len(cfg.histogramsDuring) > 0 {
		extra = append(extra, loadkit.Field{Key: "histograms_during", Value: saved})
	}
	if cfg.histogramPath != "" {
		ok := saveHistogram(ctx, client, cfg.base, cfg.histogramPath) == nil
		extra = append(extra, loadkit.Field{Key: "histogram", Value: ok})
	}
	return rep.Final(extra...)
}

// histogramDisturbs is how long a class histogram taken during the load disturbs
// the service: the full GC it forces, and the heap-after-GC sample that GC sets.
// The harness leaves it out of its fits (loadkit's Report.Disturb).
const histogramDisturbs = 5 * time.Second

// saveHistogramsDuring starts one timer per -histogram-during time; the function
// it returns waits for them (a timer not yet due is cancelled) and says how many
// histograms were saved. Each is a full GC in the service, as jcmd's is, so each
// is announced on rep first.
func saveHistogramsDuring(ctx context.Context, client *http.Client, cfg config, rep *loadkit.Report) func() int {
	ctx, cancel := context.WithCancel(ctx)
	results := make(chan bool, len(cfg.histogramsDuring))
	due := 0
	for i, at := range cfg.histogramsDuring {
		if at >= cfg.pace.Duration {
			continue
		}
		due++
		name := fmt.Sprintf("histogram-during-%s.txt", cfg.duringNames[i])
		path := filepath.Join(filepath.Dir(cfg.histogramPath), name)
		go func() {
			select {
			case <-time.After(at):
				rep.Disturb(histogramDisturbs)
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
