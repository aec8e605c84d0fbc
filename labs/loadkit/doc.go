// Package loadkit is what the course's load programs share: the command line and
// its bounds, the open-loop pacer, the in-flight cap, the counters and the progress
// protocol the harness reads. Each lab's load program (labs/NN-slug/load) keeps only
// its own requests: what it sends, how it judges an answer, what it counts.
//
// # The progress protocol
//
// A load program is bounded by its own flags (rate, count, duration) and stops by
// itself. Every second it prints to stdout one JSON object of cumulative counters:
//
//	{"t_s":3.001,"sent":1200,"ok":1190,"errors":0,"aborted":10,"skipped":0,"inflight":4}
//
// and, last, one object with "done": true and the totals (plus whatever the lab adds,
// such as latency percentiles):
//
//	{"done":true,"t_s":60.412,"sent":24000,"ok":23950,...,"p50_ms":201.3,"p99_ms":240.9}
//
// t_s is seconds since the load started, to the millisecond. The harness records
// every numeric key as the series load_<key> and reads the final line's counts for
// its checks (tools/leaklab/src/leaklab/load.py is the reader). Counters are
// cumulative; a gauge (requests in flight, sockets open) is a level and is printed in
// the progress lines only, unless the lab declares it as a [Stats.Func].
//
// # Stopping
//
// SIGINT or SIGTERM asks the program to stop early: it stops starting new work, lets
// what is in flight finish for a bounded time and still prints its final line, as at
// the end of its duration. The harness sends SIGTERM once an adaptive run's verdict is
// decided, and does not check the exit status then.
//
// # Exit status
//
// [Main] exits 0 after a run (and after -h), 2 for a bad command line (one line on
// stderr, no usage text) and 1 when the lab's run returns an error; a lab may return
// its context's error to say it was interrupted (lab 03 does).
//
// # The open loop
//
// [Pace] starts work when it is due, n/rate seconds after the start, whether or not
// earlier work has finished, as a fleet of clients would. [Gate] caps what is in
// flight: work due while the cap is reached is counted as skipped and never sent,
// because in an open loop a late request is a lost request, never a queued one.
package loadkit
