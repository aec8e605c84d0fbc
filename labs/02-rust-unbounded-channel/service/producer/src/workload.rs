use std::thread;
use std::time::{Duration, Instant};

use courier::{Client, Error};

use crate::queue_clock::QueueClock;
use crate::stop::StopFlag;

/// What every message of a run goes through: the client, the clock that
/// times its wait in the queue, and the signal that can end the run early.
pub struct Sending<'a> {
    pub client: &'a Client,
    pub clock: &'a QueueClock,
    pub stop: &'a StopFlag,
}

/// How often steady mode wakes up to send what has fallen due. Short enough
/// to look smooth at 100,000 messages/s, long enough not to spin a core.
const STEADY_TICK: Duration = Duration::from_millis(1);

/// Sends `messages` copies of `payload` back to back, or until `stop`.
pub fn burst(sending: &Sending, payload: &[u8], messages: u64) -> Result<(), Error> {
    for _ in 0..messages {
        if sending.stop.raised() {
            break;
        }
        sending.client.send(payload)?;
        sending.clock.queued();
    }
    Ok(())
}

/// Sends `rate` copies of `payload` per second for `duration`, or until `stop`.
///
/// Messages are due on a fixed schedule from the start; if `send` holds
/// the caller up, the schedule is not stretched, the backlog is sent as
/// soon as `send` allows, and whatever is still due at the end is skipped.
pub fn steady(
    sending: &Sending,
    payload: &[u8],
    rate: u64,
    duration: Duration,
) -> Result<(), Error> {
    let start = Instant::now();
    let mut sent: u64 = 0;
    loop {
        let elapsed = start.elapsed();
        if elapsed >= duration || sending.stop.raised() {
            return Ok(());
        }
        let due = (elapsed.as_secs_f64() * rate as f64) as u64;
        while sent < due && start.elapsed() < duration && !sending.stop.raised() {
            sending.client.send(payload)?;
            sending.clock.queued();
            sent += 1;
        }
        thread::sleep(STEADY_TICK);
    }
}
