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
//! Prints one JSON line. Flags: --subscribers 8 --events 20000 --rate 10000
//! --slow-rate 2000 --capacity 1024 (events per second for both rates).

use std::process::ExitCode;
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

/// What one subscriber saw.
#[derive(Debug, Default)]
struct Tally {
    received: u64,
    /// Sequence numbers skipped between two values received.
    gaps: u64,
    /// `Lagged` errors, and the values they said were missed.
    lagged_reports: u64,
    lagged_events: u64,
}

/// Reads until the channel closes; with `pace`, never faster than that many values per
/// second (a subscriber doing slow work per event).
async fn subscribe(mut rx: broadcast::Receiver<u64>, pace: Option<f64>) -> Tally {
    let start = Instant::now();
    let mut tally = Tally::default();
    let mut next = 0;
    loop {
        match rx.recv().await {
            Ok(seq) => {
                tally.gaps += seq - next;
                next = seq + 1;
                tally.received += 1;
                if let Some(rate) = pace {
                    while tally.received as f64 > start.elapsed().as_secs_f64() * rate {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                }
            }
            Err(RecvError::Lagged(n)) => {
                tally.lagged_reports += 1;
                tally.lagged_events += n;
            }
            Err(RecvError::Closed) => return tally,
        }
    }
}

async fn measure(s: &Settings) -> String {
    let (tx, _) = broadcast::channel::<u64>(s.capacity);
    // Subscribed before the first send: every subscriber is owed every event.
    let readers: Vec<_> = (0..s.subscribers)
        .map(|i| tokio::spawn(subscribe(tx.subscribe(), (i == 0).then_some(s.slow_rate))))
        .collect();
    let start = Instant::now();
    let mut sent = 0;
    let mut tick = tokio::time::interval(Duration::from_millis(1));
    while sent < s.events {
        tick.tick().await;
        let due = ((start.elapsed().as_secs_f64() * s.rate) as u64).min(s.events);
        while sent < due {
            // Fails only when no receiver is left, which cannot happen before they end.
            tx.send(sent).expect("subscribers are alive");
            sent += 1;
        }
    }
    let publish_s = start.elapsed().as_secs_f64();
    drop(tx); // each receiver gets Closed once it has read what is left in the ring
    let mut rows = Vec::new();
    for (i, reader) in readers.into_iter().enumerate() {
        let t = reader.await.expect("subscriber task");
        rows.push(format!(
            r#"{{"id":{i},"slow":{},"received":{},"lost":{},"gaps":{},"lagged_reports":{},"lagged_events":{}}}"#,
            i == 0,
            t.received,
            s.events - t.received,
            t.gaps,
            t.lagged_reports,
            t.lagged_events
        ));
    }
    format!(
        r#"{{"runtime":"tokio","strategy":"broadcast","capacity":{},"events":{},"rate":{},"slow_rate":{},"publish_s":{publish_s:.3},"done_s":{:.3},"subscribers":[{}]}}"#,
        s.capacity,
        s.events,
        s.rate,
        s.slow_rate,
        start.elapsed().as_secs_f64(),
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
    println!("{}", runtime.block_on(measure(&settings)));
    ExitCode::SUCCESS
}
