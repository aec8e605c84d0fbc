//! `broadcast_loss`: one match's live events fanned out with `tokio::sync::broadcast` to
//! several subscribers, one of which reads slower than the publisher writes; counts what
//! each subscriber received and what it lost.
//!
//! Not part of the replay service: the lab's "losing events" measurement (README,
//! "Fan-out: who loses events"), run by `labs/05-zio-tokio-fanout/measure/measure.py
//! broadcast` beside its ZIO counterpart (`labs/05-zio-tokio-fanout/broadcast/`).
//!
//! A broadcast channel is a ring of `capacity` slots shared by every receiver. The sender
//! never waits: when the ring is full it overwrites the oldest value. A receiver that has
//! fallen more than `capacity` values behind gets `RecvError::Lagged(n)` from its next
//! `recv`, `n` being how many values it missed, and then resumes at the oldest value
//! still in the ring. So a slow subscriber loses events but is told how many; the others
//! lose nothing.
//!
//! Run twice: `broadcast`, every subscriber reading the live feed only (what it loses),
//! and `broadcast-resync`, every subscriber also allowed to read the match log the
//! publisher appends each event to before sending it. On `Lagged(n)` (or a jump in the
//! sequence numbers, or the channel closing early) the subscriber reads the log from the
//! first sequence number it lacks up to the log's end, then goes back to the live feed
//! and drops every value it already has (a sequence number below the next one it wants).
//! The channel then decides how often a subscriber takes the slow path, not what it
//! receives.
//!
//! Prints one JSON line per run. Flags: --subscribers 8 --events 20000 --rate 10000
//! --slow-rate 2000 --capacity 1024 (events per second for both rates).

use std::process::ExitCode;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use tokio::sync::broadcast::{self, error::RecvError};

/// The command line, checked.
struct Settings {
    subscribers: usize,
    events: u64,
    rate: f64,
    slow_rate: f64,
    capacity: usize,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Settings, String> {
    let mut s = Settings {
        subscribers: 8,
        events: 20_000,
        rate: 10_000.0,
        slow_rate: 2_000.0,
        capacity: 1024,
    };
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| format!("{flag}: missing value"))?;
        let n: u64 = value
            .parse()
            .map_err(|_| format!("{flag} {value}: not a whole number"))?;
        let within = |lo: u64, hi: u64| {
            if (lo..=hi).contains(&n) {
                Ok(n)
            } else {
                Err(format!("{flag} {value}: must be {lo}..{hi}"))
            }
        };
        match flag.as_str() {
            "--subscribers" => s.subscribers = within(1, 64)? as usize,
            "--events" => s.events = within(1, 10_000_000)?,
            "--rate" => s.rate = within(1, 10_000_000)? as f64,
            "--slow-rate" => s.slow_rate = within(1, 10_000_000)? as f64,
            "--capacity" => s.capacity = within(1, 1 << 20)? as usize,
            _ => return Err(format!("unexpected argument {flag}")),
        }
    }
    Ok(s)
}

/// The match log: every event published so far, by sequence number (here the event is
/// its sequence number, so entry `i` holds `i`). The publisher appends before it sends,
/// so whatever a subscriber sees on the live feed is already in the log.
type MatchLog = Arc<RwLock<Vec<u64>>>;

/// How a subscriber reads: the live feed only, or the live feed and the log.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Live,
    Resync,
}

/// What one subscriber saw.
#[derive(Debug, Default)]
struct Tally {
    /// Events handed on in order, each once.
    received: u64,
    /// Sequence numbers skipped between two values taken from the live feed.
    gaps: u64,
    /// `Lagged` errors, and the values they said were missed.
    lagged_reports: u64,
    lagged_events: u64,
    /// Resync only: reads from the log, the events handed on from it, live values
    /// dropped as already handed on, and the most events one read had to fetch (how far
    /// back the log must reach).
    resyncs: u64,
    recovered: u64,
    duplicates: u64,
    max_behind: u64,
    /// Seconds from the start until this subscriber had read everything.
    done_s: f64,
}

/// One subscriber's reading position and what it has handed on.
struct Reader {
    next: u64,
    tally: Tally,
    pace: Option<f64>,
    start: Instant,
}

impl Reader {
    /// Hands `seq` on (it must be the next one); with `pace`, never faster than that many
    /// events per second since the start (a subscriber doing slow work per event).
    async fn deliver(&mut self, seq: u64) {
        debug_assert_eq!(seq, self.next, "events are handed on in order");
        self.next = seq + 1;
        self.tally.received += 1;
        if let Some(rate) = self.pace {
            while self.tally.received as f64 > self.start.elapsed().as_secs_f64() * rate {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    }

    /// Reads the log from the first event this reader lacks to the log's end and hands
    /// each on. The entries are copied out first: the lock is never held across a sleep.
    async fn resync(&mut self, log: &MatchLog) {
        let missing: Vec<u64> = {
            let stored = log
                .read()
                .expect("the publisher never panics holding the log");
            stored
                .get(self.next as usize..)
                .unwrap_or_default()
                .to_vec()
        };
        self.tally.resyncs += 1;
        self.tally.max_behind = self.tally.max_behind.max(missing.len() as u64);
        for seq in missing {
            self.deliver(seq).await;
            self.tally.recovered += 1;
        }
    }
}

/// Reads until the channel closes. `Live`: takes what the channel gives, counting what it
/// skipped. `Resync`: on a loss (`Lagged`, a jump, or the end with events missing) reads
/// the log from the first missing event on, and drops the live values it already has.
async fn subscribe(
    mut rx: broadcast::Receiver<u64>,
    log: MatchLog,
    events: u64,
    mode: Mode,
    pace: Option<f64>,
) -> Tally {
    let start = Instant::now();
    let mut r = Reader {
        next: 0,
        tally: Tally::default(),
        pace,
        start,
    };
    loop {
        match rx.recv().await {
            Ok(seq) if seq < r.next => r.tally.duplicates += 1,
            Ok(seq) => {
                r.tally.gaps += seq - r.next;
                if seq > r.next && mode == Mode::Resync {
                    r.resync(&log).await; // the log holds `seq` too: handed on from there
                } else {
                    r.next = seq; // Live: what was skipped is gone
                    r.deliver(seq).await;
                }
            }
            Err(RecvError::Lagged(n)) => {
                r.tally.lagged_reports += 1;
                r.tally.lagged_events += n;
                if mode == Mode::Resync {
                    r.resync(&log).await;
                }
            }
            Err(RecvError::Closed) => {
                if mode == Mode::Resync && r.next < events {
                    r.resync(&log).await;
                }
                r.tally.done_s = start.elapsed().as_secs_f64();
                return r.tally;
            }
        }
    }
}

/// One run: what the publisher took and every subscriber's tally (subscriber 0 is the
/// slow one).
struct Run {
    publish_s: f64,
    done_s: f64,
    tallies: Vec<Tally>,
}

async fn run(s: &Settings, mode: Mode) -> Run {
    let (tx, _) = broadcast::channel::<u64>(s.capacity);
    let log: MatchLog = Arc::new(RwLock::new(Vec::with_capacity(s.events as usize)));
    // Subscribed before the first send: every subscriber is owed every event.
    let readers: Vec<_> = (0..s.subscribers)
        .map(|i| {
            let pace = (i == 0).then_some(s.slow_rate);
            tokio::spawn(subscribe(tx.subscribe(), log.clone(), s.events, mode, pace))
        })
        .collect();
    let start = Instant::now();
    let mut sent = 0;
    let mut tick = tokio::time::interval(Duration::from_millis(1));
    while sent < s.events {
        tick.tick().await;
        let due = ((start.elapsed().as_secs_f64() * s.rate) as u64).min(s.events);
        if due > sent {
            // Into the log first (one write lock per batch), then onto the live feed.
            log.write()
                .expect("no reader panics holding the log")
                .extend(sent..due);
        }
        while sent < due {
            // Fails only when no receiver is left, which cannot happen before they end.
            tx.send(sent).expect("subscribers are alive");
            sent += 1;
        }
    }
    let publish_s = start.elapsed().as_secs_f64();
    drop(tx); // each receiver gets Closed once it has read what is left in the ring
    let mut tallies = Vec::new();
    for reader in readers {
        tallies.push(reader.await.expect("subscriber task"));
    }
    Run {
        publish_s,
        done_s: start.elapsed().as_secs_f64(),
        tallies,
    }
}

/// One run as the JSON line `measure.py broadcast` reads.
fn json(s: &Settings, mode: Mode, run: &Run) -> String {
    let rows: Vec<String> = run
        .tallies
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut row = format!(
                r#"{{"id":{i},"slow":{},"received":{},"lost":{},"gaps":{},"lagged_reports":{},"lagged_events":{}"#,
                i == 0,
                t.received,
                s.events - t.received,
                t.gaps,
                t.lagged_reports,
                t.lagged_events
            );
            if mode == Mode::Resync {
                row += &format!(
                    r#","resyncs":{},"recovered":{},"duplicates":{},"max_behind":{},"done_s":{:.3}"#,
                    t.resyncs, t.recovered, t.duplicates, t.max_behind, t.done_s
                );
            }
            row + "}"
        })
        .collect();
    let strategy = match mode {
        Mode::Live => "broadcast",
        Mode::Resync => "broadcast-resync",
    };
    format!(
        r#"{{"runtime":"tokio","strategy":"{strategy}","capacity":{},"events":{},"rate":{},"slow_rate":{},"publish_s":{:.3},"done_s":{:.3},"subscribers":[{}]}}"#,
        s.capacity,
        s.events,
        s.rate,
        s.slow_rate,
        run.publish_s,
        run.done_s,
        rows.join(",")
    )
}

fn main() -> ExitCode {
    let settings = match parse(std::env::args().skip(1)) {
        Ok(s) => s,
        Err(problem) => {
            eprintln!("broadcast_loss: {problem}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    for mode in [Mode::Live, Mode::Resync] {
        println!(
            "{}",
            json(&settings, mode, &runtime.block_on(run(&settings, mode)))
        );
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small run in which the slow subscriber must fall behind: 3,000 events at 20,000/s
    /// through 256 slots, the slow one reading 2,000/s (about 1.5 s). On a busy machine a
    /// fast subscriber may lag too, so only the slow one's figures are asserted exactly.
    fn settings() -> Settings {
        Settings {
            subscribers: 3,
            events: 3_000,
            rate: 20_000.0,
            slow_rate: 2_000.0,
            capacity: 256,
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lagging_live_subscriber_loses_events_and_is_told() {
        let run = run(&settings(), Mode::Live).await;
        let slow = &run.tallies[0];
        assert!(
            slow.received < 3_000,
            "the slow subscriber lagged: {slow:?}"
        );
        assert_eq!(
            slow.lagged_events,
            3_000 - slow.received,
            "told exactly what it lost"
        );
        assert_eq!(slow.recovered, 0, "a live subscriber never reads the log");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lagging_subscriber_that_resyncs_from_the_log_loses_nothing() {
        let run = run(&settings(), Mode::Resync).await;
        let slow = &run.tallies[0];
        assert!(slow.lagged_reports > 0, "it lagged: {slow:?}");
        assert_eq!(slow.received, 3_000, "every event, once: {slow:?}");
        assert!(
            slow.recovered >= slow.lagged_events,
            "at least what it missed, from the log"
        );
        assert!(
            run.tallies.iter().all(|t| t.received == 3_000),
            "nobody lost anything"
        );
    }
}
