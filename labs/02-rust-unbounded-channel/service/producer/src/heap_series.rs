//! Heap time series for the `stats-alloc` feature.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use stats_alloc::StatsAlloc;

use crate::queue_clock::QueueClock;

/// Counts every allocation in the process, on top of the system's malloc
/// (the default build, the one every standard run measures).
#[cfg(not(any(feature = "jemalloc", feature = "mimalloc")))]
#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

/// The same counters on top of jemalloc: `live_bytes` still counts what the
/// program asks for, so only RSS tells the allocators apart.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: StatsAlloc<tikv_jemallocator::Jemalloc> =
    StatsAlloc::new(tikv_jemallocator::Jemalloc);

/// The same counters on top of mimalloc.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: StatsAlloc<mimalloc::MiMalloc> = StatsAlloc::new(mimalloc::MiMalloc);

const INTERVAL: Duration = Duration::from_millis(100);

/// Writes the allocator's cumulative counters to a file every 100 ms, one
/// JSON line per sample, so a plot shows how much heap is live over time,
/// with the queue's depth and the age of its oldest message (`QueueClock`).
///
/// Each line is flushed as it is written so a reader can tail the file
/// while the producer runs.
pub struct HeapSeries {
    stop: mpsc::Sender<()>,
    thread: thread::JoinHandle<()>,
}

impl HeapSeries {
    /// Starts sampling into `$LEAKLAB_SERIES_FILE`; `Ok(None)` if unset.
    pub fn from_env(
        origin: Instant,
        clock: Arc<QueueClock>,
    ) -> std::io::Result<Option<HeapSeries>> {
        let Some(path) = std::env::var_os("LEAKLAB_SERIES_FILE") else {
            return Ok(None);
        };
        let mut out = BufWriter::new(File::create(path)?);
        let (stop, stopped) = mpsc::channel();
        let thread = thread::Builder::new()
            .name("heap-series".into())
            .spawn(move || {
                let mut next = origin;
                loop {
                    // A failed write only loses the series, not the run.
                    let _ = sample(&mut out, origin, &clock);
                    next += INTERVAL;
                    let wait = next.saturating_duration_since(Instant::now());
                    match stopped.recv_timeout(wait) {
                        Err(RecvTimeoutError::Timeout) => {}
                        // Stop asked: take a last sample at the very end.
                        _ => {
                            let _ = sample(&mut out, origin, &clock);
                            return;
                        }
                    }
                }
            })?;
        Ok(Some(HeapSeries { stop, thread }))
    }

    pub fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}

fn sample(out: &mut impl Write, origin: Instant, clock: &QueueClock) -> std::io::Result<()> {
    // The queue first: forgetting answered messages frees a little heap.
    let queue = clock.sample();
    let stats = GLOBAL.stats();
    let allocated = stats.bytes_allocated as u64;
    let deallocated = stats.bytes_deallocated as u64;
    writeln!(
        out,
        "{{\"t_s\":{:.3},\"allocated_bytes\":{allocated},\"deallocated_bytes\":{deallocated},\"live_bytes\":{},\"queue_depth\":{},\"queue_age_s\":{:.4}}}",
        origin.elapsed().as_secs_f64(),
        allocated as i64 - deallocated as i64,
        queue.depth,
        queue.oldest_age_s,
    )?;
    out.flush()
}
