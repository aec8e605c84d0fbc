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
        let _ = write!(
            out,
            ",\"stats_alloc\":true,\"allocated_bytes\":{},\"deallocated_bytes\":{},\
             \"reallocated_bytes\":{},\"live_bytes\":{},\"allocations\":{},\"deallocations\":{},\"reallocations\":{}",
            s.bytes_allocated,
            s.bytes_deallocated,
            s.bytes_reallocated,
            live_bytes(&s),
            s.allocations,
            s.deallocations,
            s.reallocations
        );
    }
}

/// Bytes requested and not freed yet.
///
/// stats_alloc adds what a `realloc` grows a block by to `bytes_allocated`, and what it
/// shrinks it by to `bytes_deallocated`. `bytes_reallocated` is the net of those same
/// changes: adding it as well would count every growth twice, and live bytes would
/// drift upward with every `Vec` that grows.
#[cfg(feature = "stats-alloc")]
fn live_bytes(s: &stats_alloc::Stats) -> i128 {
    s.bytes_allocated as i128 - s.bytes_deallocated as i128
}

#[cfg(not(feature = "stats-alloc"))]
fn write_alloc(out: &mut String) {
    let _ = crate::alloc_stats();
    out.push_str(",\"stats_alloc\":false");
}

#[cfg(all(test, feature = "stats-alloc"))]
mod tests {
    use std::alloc::{GlobalAlloc, Layout};

    use stats_alloc::StatsAlloc;

    use super::live_bytes;

    #[test]
    fn live_bytes_follow_a_realloc_without_counting_it_twice() {
        // A private instrumented allocator: the global one also counts the test harness.
        let alloc = StatsAlloc::system();
        let layout = |size| Layout::from_size_align(size, 8).unwrap();
        // SAFETY: each pointer is non-null-checked, then passed back to the allocator
        // that returned it with the layout it currently has, and freed once.
        unsafe {
            let block = alloc.alloc(layout(64));
            assert!(!block.is_null());
            let block = alloc.realloc(block, layout(64), 4096);
            assert!(!block.is_null());
            assert_eq!(live_bytes(&alloc.stats()), 4096);
            let block = alloc.realloc(block, layout(4096), 1024);
            assert!(!block.is_null());
            assert_eq!(live_bytes(&alloc.stats()), 1024);
            alloc.dealloc(block, layout(1024));
        }
        assert_eq!(live_bytes(&alloc.stats()), 0);
    }
}
