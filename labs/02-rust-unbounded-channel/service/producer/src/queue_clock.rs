//! The post's `created_time`, kept by the test program: when each message
//! was queued, so the heap series can say how many messages wait and for how
//! long. It lives here, outside `courier`, so that it measures any client
//! the same way: it relies only on `send` accepting messages in order and
//! on the client's counters of acknowledged and failed messages.

// Only the `stats-alloc` build samples the clock.
#![cfg_attr(not(feature = "stats-alloc"), allow(dead_code))]

use std::collections::VecDeque;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Instant;

use courier::Stats;

/// When each message that `send` accepted and the broker has not yet
/// answered was queued, oldest first.
///
/// One `u32` (microseconds since the program started) per waiting message:
/// 4 bytes next to each message's 1 KB copy, freed as the broker answers.
pub struct QueueClock {
    /// Off unless a sampler reads it: then `queued` keeps nothing.
    on: bool,
    origin: Instant,
    stats: OnceLock<Stats>,
    waiting: Mutex<Waiting>,
}

#[derive(Default)]
struct Waiting {
    /// Queue instants of the messages not yet answered, oldest first.
    queued_us: VecDeque<u32>,
    /// Messages answered and dropped from the front so far.
    answered: u64,
}

/// The queue at one instant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueSample {
    /// Messages accepted by `send` and not yet answered by the broker.
    pub depth: u64,
    /// How long the oldest of them has waited, in seconds (0 when none).
    pub oldest_age_s: f64,
}

impl QueueClock {
    /// A clock that keeps time from `origin`.
    pub fn new(origin: Instant) -> QueueClock {
        QueueClock {
            on: true,
            origin,
            stats: OnceLock::new(),
            waiting: Mutex::default(),
        }
    }

    /// A clock that keeps nothing, for runs without a heap series (the
    /// dhat profile then shows only the client's allocations).
    #[cfg_attr(feature = "stats-alloc", allow(dead_code))]
    pub fn off() -> QueueClock {
        QueueClock {
            on: false,
            ..QueueClock::new(Instant::now())
        }
    }

    /// The client's counters, once it is connected.
    pub fn watch(&self, stats: Stats) {
        let _ = self.stats.set(stats);
    }

    /// Call each time `send` has accepted a message.
    pub fn queued(&self) {
        if !self.on {
            return;
        }
        let now = micros(self.origin);
        lock(&self.waiting).queued_us.push_back(now);
    }

    /// Forgets the messages the broker has answered (the client delivers in
    /// the order `send` accepted them) and measures what is left.
    pub fn sample(&self) -> QueueSample {
        let answered = self
            .stats
            .get()
            .map(|stats| {
                let report = stats.snapshot();
                report.acked + report.failed
            })
            .unwrap_or(0);
        let now = micros(self.origin);
        let mut waiting = lock(&self.waiting);
        while waiting.answered < answered && waiting.queued_us.pop_front().is_some() {
            waiting.answered += 1;
        }
        if waiting.queued_us.is_empty() {
            // Give the memory back once the backlog is gone.
            waiting.queued_us.shrink_to_fit();
        }
        QueueSample {
            depth: waiting.queued_us.len() as u64,
            oldest_age_s: waiting
                .queued_us
                .front()
                .map_or(0.0, |&t| f64::from(now.saturating_sub(t)) / 1e6),
        }
    }
}

fn micros(origin: Instant) -> u32 {
    u32::try_from(origin.elapsed().as_micros()).unwrap_or(u32::MAX)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_before_anything_is_sent() {
        let clock = QueueClock::new(Instant::now());
        assert_eq!(
            clock.sample(),
            QueueSample {
                depth: 0,
                oldest_age_s: 0.0
            }
        );
    }

    #[test]
    fn counts_what_waits_and_how_long_the_oldest_has() {
        let clock = QueueClock::new(Instant::now());
        clock.queued();
        std::thread::sleep(std::time::Duration::from_millis(20));
        clock.queued();
        let sample = clock.sample();
        assert_eq!(sample.depth, 2);
        assert!(sample.oldest_age_s >= 0.02, "{sample:?}");
    }

    #[test]
    fn off_keeps_nothing() {
        let clock = QueueClock::off();
        clock.queued();
        assert_eq!(clock.sample().depth, 0);
    }
}
