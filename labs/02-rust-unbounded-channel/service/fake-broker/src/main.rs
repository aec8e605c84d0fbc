//! `fake-broker`: run the Leak Lab broker on a loopback port.

use std::process::ExitCode;

use fake_broker::{parse_args, serve, USAGE};
use tokio::net::TcpListener;

fn main() -> ExitCode {
    let settings = match parse_args(std::env::args().skip(1)) {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("fake-broker: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // One thread is plenty for a loopback broker, and leaves the other
    // core to the program being measured.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("fake-broker: cannot start runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let listener = match TcpListener::bind(settings.listen).await {
            Ok(listener) => listener,
            Err(e) => {
                eprintln!("fake-broker: cannot listen on {}: {e}", settings.listen);
                return ExitCode::FAILURE;
            }
        };
        let addr = listener.local_addr().unwrap_or(settings.listen);
        let b = &settings.behavior;
        // The CLI tests read this line; the harness waits on the TCP port instead
        // (`ready = { tcp = true }` in lab.toml).
        eprintln!(
            "fake-broker: listening on {addr} latency_ms={} per_message_us={} fail_every={} disconnect_after={}",
            b.latency.as_millis(),
            b.per_message.as_micros(),
            b.fail_every.map_or("off".to_owned(), |n| n.to_string()),
            b.disconnect_after.map_or("off".to_owned(), |n| n.to_string()),
        );
        let shutdown = async {
            // If signals cannot be installed, run until killed.
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        serve(listener, settings.behavior, shutdown).await;
        eprintln!("fake-broker: shutting down");
        ExitCode::SUCCESS
    })
}
