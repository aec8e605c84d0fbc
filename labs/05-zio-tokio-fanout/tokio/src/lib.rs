//! Lab 05, the rewrite: the match-replay API of the ZIO service on Tokio + axum.
//!
//! Each replay gets a bounded `tokio::sync::mpsc` channel: one producer task sends
//! compact `Copy` events into it and waits whenever it is full (backpressure), and
//! the response body drains it a batch at a time, rendering each batch into one buffer.
//! When the client goes away the body is dropped, the channel closes and the
//! producer's next send fails, so nothing outlives the request.

pub mod api;
pub mod matchlog;
pub mod metrics;
pub mod replay;

#[cfg(feature = "stats-alloc")]
#[global_allocator]
static GLOBAL: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

/// Allocator counters when built with `--features stats-alloc`.
#[cfg(feature = "stats-alloc")]
pub fn alloc_stats() -> Option<stats_alloc::Stats> {
    Some(GLOBAL.stats())
}

/// Allocator counters when built with `--features stats-alloc`.
#[cfg(not(feature = "stats-alloc"))]
pub fn alloc_stats() -> Option<()> {
    None
}
