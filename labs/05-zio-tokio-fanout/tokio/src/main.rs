//! `replay-tokio --port N`: serves the replay API on 127.0.0.1 until SIGTERM or Ctrl-C.

use std::process::ExitCode;
use std::sync::Arc;

use axum::serve::ListenerExt;
use replay_tokio::api::{router, AppState};
use replay_tokio::matchlog::MatchLog;
use replay_tokio::metrics::Metrics;

const USAGE: &str = "usage: replay-tokio --port N [--matches 64] [--players 72] \
[--events-per-player 256] [--max-count 4096] [--channel-capacity 1024] [--workers 2]";

struct Args {
    port: u16,
    log: MatchLog,
    max_count: u32,
    channel_capacity: usize,
    workers: usize,
}

fn parse_args(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut args = Args {
        port: 0,
        log: MatchLog::default(),
        max_count: 4096,
        // The case study sized its channel at 8k events for 720-player matches; the lab's
        // matches are ten times smaller, and so is the default channel (1k x 20 B = 20 KB).
        channel_capacity: 1024,
        // The case study ran 24 workers on 48 cores; the lab machine has 2.
        workers: 2,
    };
    let mut port = None;
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| format!("{flag}: missing value\n{USAGE}"))?;
        let num = |max: u64| -> Result<u64, String> {
            match value.parse::<u64>() {
                Ok(n) if n >= 1 && n <= max => Ok(n),
                _ => Err(format!("{flag} {value}: must be 1..{max}")),
            }
        };
        match flag.as_str() {
            "--port" => port = Some(num(65535)? as u16),
            "--matches" => args.log.matches = num(100_000)? as u32,
            "--players" => args.log.players = num(10_000)? as u32,
            "--events-per-player" => args.log.events_per_player = num(100_000)? as u32,
            "--max-count" => args.max_count = num(1_000_000)? as u32,
            "--channel-capacity" => args.channel_capacity = num(1 << 20)? as usize,
            "--workers" => args.workers = num(256)? as usize,
            _ => return Err(format!("unexpected argument {flag}\n{USAGE}")),
        }
    }
    if u64::from(args.log.players) * u64::from(args.log.events_per_player) > (i32::MAX / 2) as u64 {
        return Err("match too large".into());
    }
    args.port = port.ok_or_else(|| format!("--port is required\n{USAGE}"))?;
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(problem) => {
            eprintln!("{problem}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.workers)
        .enable_all()
        .build()
        .expect("tokio runtime");
    match runtime.block_on(serve(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("replay-tokio: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(args: Args) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await?;
    let local = listener.local_addr()?;
    // A replay body is written a batch at a time and ends with a small last chunk. With
    // Nagle's algorithm on, that last write waits for the ACK of the one before, which a
    // client on a kept-alive connection delays by up to 40 ms: every reply but a
    // connection's first took ~41 ms. Netty (under zio-http) sets TCP_NODELAY by default;
    // tokio's listener leaves it to us.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            eprintln!("replay-tokio: TCP_NODELAY not set: {e}");
        }
    });
    println!(
        "listening on http://{}: {} matches of {} players x {} events, channel capacity {}",
        local,
        args.log.matches,
        args.log.players,
        args.log.events_per_player,
        args.channel_capacity
    );
    let state = Arc::new(AppState {
        log: args.log,
        max_count: args.max_count,
        channel_capacity: args.channel_capacity,
        metrics: Arc::new(Metrics::default()),
    });
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown())
        .await
}

/// Resolves on SIGTERM or SIGINT.
async fn shutdown() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
