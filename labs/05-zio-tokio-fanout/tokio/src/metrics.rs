//! Counters for `/metrics`, plus the allocator's when built with `stats-alloc`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default)]
pub struct Metrics {
    pub requests_served: AtomicU64,
    pub events_streamed: AtomicU64,
    /// Replays whose body has not been dropped yet.
    pub open_replays: AtomicU64,
}

impl Metrics {
    /// One JSON object. Allocator fields are present only with `stats-alloc`.
    pub fn json(&self) -> String {
        let mut out = String::with_capacity(256);
        let _ = write!(
            out,
            "{{\"requests_served\":{},\"events_streamed\":{},\"open_replays\":{}",
            self.requests_served.load(Ordering::Relaxed),
            self.events_streamed.load(Ordering::Relaxed),
            self.open_replays.load(Ordering::Relaxed)
        );
        write_alloc(&mut out);
        out.push('}');
        out
    }
}

#[cfg(feature = "stats-alloc")]
fn write_alloc(out: &mut String) {
    if let Some(s) = crate::alloc_stats() {
        let allocated = s.bytes_allocated as i128;
        let deallocated = s.bytes_deallocated as i128;
        let live = allocated - deallocated + s.bytes_reallocated as i128;
        let _ = write!(
            out,
            ",\"stats_alloc\":true,\"allocated_bytes\":{allocated},\"deallocated_bytes\":{deallocated},\
             \"reallocated_bytes\":{},\"live_bytes\":{live},\"allocations\":{},\"deallocations\":{},\"reallocations\":{}",
            s.bytes_reallocated, s.allocations, s.deallocations, s.reallocations
        );
    }
}

#[cfg(not(feature = "stats-alloc"))]
fn write_alloc(out: &mut String) {
    let _ = crate::alloc_stats();
    out.push_str(",\"stats_alloc\":false");
}
