//! One replay: a producer task, a bounded channel, and a body that drains it.

use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_core::Stream;
use tokio::sync::mpsc;

use crate::matchlog::{Event, MatchLog};
use crate::metrics::Metrics;

/// Most events rendered into one body chunk.
pub const BATCH: usize = 256;

/// Starts the producer of `count` events of `match_id` from `from` and returns the body
/// that streams them. The channel holds at most `capacity` events: a producer ahead of
/// its client waits instead of piling events up.
pub fn start(
    log: MatchLog,
    match_id: u32,
    from: u32,
    count: u32,
    capacity: usize,
    metrics: Arc<Metrics>,
) -> ReplayBody {
    let (tx, rx) = mpsc::channel::<Event>(capacity);
    tokio::spawn(async move {
        for seq in from..from + count {
            if tx.send(log.event(match_id, seq)).await.is_err() {
                // The body was dropped: the client is gone.
                return;
            }
        }
    });
    metrics.open_replays.fetch_add(1, Ordering::Relaxed);
    ReplayBody {
        rx,
        batch: Vec::with_capacity(BATCH.min(capacity)),
        metrics,
    }
}

/// The response body: each poll takes what the channel holds (up to `BATCH` events)
/// and renders it into one chunk.
pub struct ReplayBody {
    rx: mpsc::Receiver<Event>,
    batch: Vec<Event>,
    metrics: Arc<Metrics>,
}

impl Stream for ReplayBody {
    type Item = Result<Bytes, std::convert::Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        this.batch.clear();
        match this.rx.poll_recv_many(cx, &mut this.batch, BATCH) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(0) => Poll::Ready(None),
            Poll::Ready(n) => {
                let mut out = Vec::with_capacity(n * 80);
                for event in &this.batch {
                    event.write_line(&mut out);
                }
                this.metrics
                    .events_streamed
                    .fetch_add(n as u64, Ordering::Relaxed);
                Poll::Ready(Some(Ok(Bytes::from(out))))
            }
        }
    }
}

impl Drop for ReplayBody {
    fn drop(&mut self) {
        self.metrics.open_replays.fetch_sub(1, Ordering::Relaxed);
    }
}
