//! `producer`: the Leak Lab test program.
//!
//! Pushes a burst or a steady stream of messages through `courier`, prints a
//! JSON progress line every second and a final `"done"` line after `close`
//! has flushed everything. SIGTERM or Ctrl-C stops the sending early (see
//! `stop`). Exit codes: 0 success (or stopped), 1 delivery failed, 2 bad
//! command line.
//!
//! Build with `--features stats-alloc` for a heap time series, or
//! `--features dhat-heap` for a dhat heap profile (not both). `--features
//! jemalloc` or `--features mimalloc` take the same series with that
//! allocator under stats_alloc in place of the system's malloc.

#[cfg(all(feature = "stats-alloc", feature = "dhat-heap"))]
compile_error!("features `stats-alloc` and `dhat-heap` both install a global allocator; pick one");
#[cfg(all(feature = "jemalloc", feature = "mimalloc"))]
compile_error!("features `jemalloc` and `mimalloc` both pick the allocator; pick one");

mod args;
#[cfg(feature = "stats-alloc")]
mod heap_series;
mod progress;
mod queue_clock;
mod stop;
mod trim;
mod workload;

use std::panic;
use std::process::ExitCode;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use args::Mode;
use courier::{Client, Config, Error, Report};
use progress::ProgressReporter;
use queue_clock::QueueClock;
use stop::{StopFlag, STOP_GRACE};

#[cfg(feature = "dhat-heap")]
#[global_allocator]
static DHAT: dhat::Alloc = dhat::Alloc;

fn main() -> ExitCode {
    // The profiler writes its file when dropped, which is why `main`
    // returns an ExitCode instead of calling `process::exit`.
    #[cfg(feature = "dhat-heap")]
    let _profiler = match std::env::var("LEAKLAB_DHAT_FILE") {
        Ok(path) => dhat::Profiler::builder().file_name(path).build(),
        Err(_) => dhat::Profiler::new_heap(),
    };

    let origin = Instant::now();
    let args = match args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("producer: {e}");
            return ExitCode::from(2);
        }
    };

    let stop = match StopFlag::install() {
        Ok(stop) => stop,
        Err(e) => {
            eprintln!("producer: cannot install the SIGTERM/SIGINT handlers: {e}");
            return ExitCode::FAILURE;
        }
    };

    #[cfg(feature = "stats-alloc")]
    let clock = Arc::new(QueueClock::new(origin));
    #[cfg(feature = "stats-alloc")]
    let series = match heap_series::HeapSeries::from_env(origin, clock.clone()) {
        Ok(series) => series,
        Err(e) => {
            eprintln!("producer: cannot write LEAKLAB_SERIES_FILE: {e}");
            return ExitCode::FAILURE;
        }
    };
    #[cfg(not(feature = "stats-alloc"))]
    let clock = Arc::new(QueueClock::off());

    let code = run(&args, origin, &clock, &stop);

    #[cfg(feature = "stats-alloc")]
    if let Some(series) = series {
        series.stop();
    }
    code
}

fn run(args: &args::Args, origin: Instant, clock: &QueueClock, stop: &StopFlag) -> ExitCode {
    let client = match Client::connect(&args.broker, Config::default()) {
        Ok(client) => client,
        Err(e) => {
            eprintln!("producer: {e}");
            return ExitCode::FAILURE;
        }
    };
    let stats = client.stats();
    clock.watch(stats.clone());
    let reporter = ProgressReporter::start(stats.clone(), origin);
    let payload = vec![0xA5u8; args.size];

    let started = Instant::now();
    let sending = workload::Sending {
        client: &client,
        clock,
        stop,
    };
    let sent = match args.mode {
        Mode::Burst { messages } => workload::burst(&sending, &payload, messages),
        Mode::Steady { rate, duration } => workload::steady(&sending, &payload, rate, duration),
    };
    // The load phase ends here; what follows is the drain of whatever is queued.
    let load_end = origin.elapsed();
    // Close even after a failed send: it stops the background sender and
    // reports the same failure with the final counts.
    let closed = close_unless_stopped(client, stop);
    let wall = started.elapsed();

    reporter.stop();
    let report = stats.snapshot();
    println!(
        "{}",
        progress::done_line(origin.elapsed(), report, wall, load_end, stop.raised())
    );
    let closed = closed.unwrap_or_else(|| {
        // Stopped with a backlog: reported, and left behind with the process.
        let undelivered = report.accepted - report.acked - report.failed;
        eprintln!("producer: stopped early; {undelivered} queued messages were not delivered");
        Ok(report)
    });
    if !stop.raised() {
        after_drain(args);
    }

    match sent.and(closed) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("producer: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `close` (which waits for the queue to drain) on its own thread, so that a
/// stop signal, before or during the drain, can cut the wait: the queue then
/// gets `STOP_GRACE`, and `None` says it was still draining after it.
fn close_unless_stopped(client: Client, stop: &StopFlag) -> Option<Result<Report, Error>> {
    let (done, closed) = mpsc::channel();
    let closer = thread::spawn(move || {
        let _ = done.send(client.close());
    });
    let mut give_up = None;
    loop {
        match closed.recv_timeout(Duration::from_millis(10)) {
            Ok(result) => return Some(result),
            // `close` panicked: the panic carries on here, as a direct call's would.
            Err(RecvTimeoutError::Disconnected) => match closer.join() {
                Err(panic) => panic::resume_unwind(panic),
                Ok(()) => unreachable!("the closing thread ends by sending its result"),
            },
            Err(RecvTimeoutError::Timeout) if stop.raised() => {
                let at = *give_up.get_or_insert_with(|| Instant::now() + STOP_GRACE);
                if Instant::now() >= at {
                    return None;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

/// What the program does once everything is delivered: optionally hands
/// free memory back to the kernel, then stays alive and idle for
/// `--linger-s`, so the harness can sample RSS after the drain.
fn after_drain(args: &args::Args) {
    if args.trim && !trim::release_free_memory() {
        eprintln!("producer: --trim: the allocator returned nothing (or cannot trim here)");
    }
    thread::sleep(args.linger);
}
