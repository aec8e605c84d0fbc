use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::Error;

/// Counts at one point in time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Report {
    /// Messages `send` accepted.
    pub accepted: u64,
    /// Messages the broker acknowledged.
    pub acked: u64,
    /// Messages the broker rejected with an error response.
    pub failed: u64,
}

/// What the background sender has done so far, shared with the caller.
///
/// It exists so progress can be read from any thread while delivery runs
/// (the producer prints it every second), and so a fatal error seen by the
/// background sender reaches the caller's next `send` or `close`.
/// Cloning is cheap: every clone looks at the same counters.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    accepted: AtomicU64,
    acked: AtomicU64,
    failed: AtomicU64,
    /// First error response from the broker; delivery carried on after it.
    first_rejection: Mutex<Option<Error>>,
    /// The error that stopped the background sender, if one did.
    fatal: Mutex<Option<Error>>,
}

impl Stats {
    /// The counters right now.
    pub fn snapshot(&self) -> Report {
        // Read acked before accepted so a snapshot never shows more
        // acknowledged than accepted messages.
        let acked = self.shared.acked.load(Ordering::Acquire);
        let failed = self.shared.failed.load(Ordering::Acquire);
        let accepted = self.shared.accepted.load(Ordering::Acquire);
        Report {
            accepted,
            acked,
            failed,
        }
    }

    /// The error that stopped delivery, if any.
    pub fn fatal_error(&self) -> Option<Error> {
        lock(&self.shared.fatal).clone()
    }

    pub(crate) fn record_accepted(&self) {
        self.shared.accepted.fetch_add(1, Ordering::AcqRel);
    }

    /// Undoes `record_accepted` for a message the queue refused after all.
    pub(crate) fn record_refused(&self) {
        self.shared.accepted.fetch_sub(1, Ordering::AcqRel);
    }

    pub(crate) fn record_acked(&self, messages: u64) {
        self.shared.acked.fetch_add(messages, Ordering::AcqRel);
    }

    pub(crate) fn record_rejected(&self, messages: u64, error: Error) {
        self.shared.failed.fetch_add(messages, Ordering::AcqRel);
        lock(&self.shared.first_rejection).get_or_insert(error);
    }

    pub(crate) fn record_fatal(&self, error: Error) {
        lock(&self.shared.fatal).get_or_insert(error);
    }

    /// What `close` reports once the background sender has finished:
    /// the counts if every accepted message was acknowledged, otherwise
    /// the error that explains why not.
    pub(crate) fn outcome(&self) -> Result<Report, Error> {
        if let Some(fatal) = self.fatal_error() {
            return Err(fatal);
        }
        if let Some(rejection) = lock(&self.shared.first_rejection).clone() {
            return Err(rejection);
        }
        let report = self.snapshot();
        if report.acked != report.accepted {
            // The sender stopped without saying why (it panicked).
            return Err(Error::Closed);
        }
        Ok(report)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The guarded values are plain Options; a panic elsewhere cannot leave
    // them half-written, so a poisoned lock is still safe to use.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
