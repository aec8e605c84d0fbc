use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use courier::{Report, Stats};

const INTERVAL: Duration = Duration::from_secs(1);

/// Prints one cumulative JSON progress line to stdout every second.
///
/// It runs on its own thread because the interesting part, waiting in
/// `close` for the queue to drain, blocks the main thread.
pub struct ProgressReporter {
    stop: mpsc::Sender<()>,
    thread: thread::JoinHandle<()>,
}

impl ProgressReporter {
    pub fn start(stats: Stats, origin: Instant) -> ProgressReporter {
        let (stop, stopped) = mpsc::channel();
        let thread = thread::spawn(move || {
            let mut next = origin + INTERVAL;
            loop {
                let wait = next.saturating_duration_since(Instant::now());
                match stopped.recv_timeout(wait) {
                    Err(RecvTimeoutError::Timeout) => {}
                    // Stop asked, or the producer is gone.
                    _ => return,
                }
                println!("{}", line(origin.elapsed(), stats.snapshot()));
                next += INTERVAL;
            }
        });
        ProgressReporter { stop, thread }
    }

    /// Stops the thread before the final line is printed, so the two can
    /// never interleave.
    pub fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}

/// `{"t_s":1.000,"sent":N,"acked":N,"errors":N}`
pub fn line(t: Duration, report: Report) -> String {
    format!(
        "{{\"t_s\":{:.3},\"sent\":{},\"acked\":{},\"errors\":{}}}",
        t.as_secs_f64(),
        report.accepted,
        report.acked,
        report.failed
    )
}

/// `{"done":true,"t_s":...,"sent":...,"acked":...,"errors":...,"wall_s":...,"load_end_s":...,"stopped":false}`
///
/// `wall_s` runs from the first send until `close` returned (everything
/// delivered); `load_end_s` is when the last send returned, counted like
/// `t_s` from the program's start. Between the two the queue drains.
/// `stopped` says a signal ended the sending early; the counts then say what
/// was delivered by the time the program gave up waiting.
pub fn done_line(
    t: Duration,
    report: Report,
    wall: Duration,
    load_end: Duration,
    stopped: bool,
) -> String {
    format!(
        "{{\"done\":true,\"t_s\":{:.3},\"sent\":{},\"acked\":{},\"errors\":{},\"wall_s\":{:.3},\"load_end_s\":{:.3},\"stopped\":{}}}",
        t.as_secs_f64(),
        report.accepted,
        report.acked,
        report.failed,
        wall.as_secs_f64(),
        load_end.as_secs_f64(),
        stopped
    )
}
