//! The `producer` binary end to end: progress protocol, exit codes and
//! flag errors. The broker runs in-process on a free port.

use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use fake_broker::Behavior;

const PRODUCER: &str = env!("CARGO_BIN_EXE_producer");
const DEADLINE: Duration = Duration::from_secs(60);

/// A fake broker on its own thread; it stops when this is dropped.
struct Broker {
    addr: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Broker {
    fn start(behavior: Behavior) -> Broker {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = thread::spawn(move || {
            runtime.block_on(fake_broker::serve(listener, behavior, async {
                let _ = stopped.await;
            }))
        });
        Broker {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Runs the producer and kills it if it outlives `DEADLINE`.
fn run(args: &[&str]) -> Output {
    let mut child = Command::new(PRODUCER)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("producer {args:?} did not finish within {DEADLINE:?}");
        }
        thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

fn last_line(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout.lines().last().unwrap_or_default().to_owned()
}

#[test]
fn burst_flushes_and_prints_the_done_line() {
    let broker = Broker::start(Behavior::default());
    let output = run(&[
        "--broker",
        &broker.addr,
        "--mode",
        "burst",
        "--messages",
        "500",
        "--size",
        "64",
    ]);
    assert!(output.status.success(), "{output:?}");
    let done = last_line(&output);
    assert!(done.starts_with("{\"done\":true,"), "{done}");
    assert!(
        done.contains("\"sent\":500,\"acked\":500,\"errors\":0"),
        "{done}"
    );
    assert!(done.contains("\"wall_s\":"), "{done}");
}

// Three seconds for two progress lines: the ticks at 1 s and 2 s come well before the
// end. (With two seconds the second tick raced the end of sending, and a busy machine
// printed the done line first.)
#[test]
fn steady_prints_progress_every_second() {
    let broker = Broker::start(Behavior::default());
    let output = run(&[
        "--broker",
        &broker.addr,
        "--mode",
        "steady",
        "--rate",
        "200",
        "--duration-s",
        "3",
    ]);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let progress: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("{\"t_s\":"))
        .collect();
    assert!(progress.len() >= 2, "{stdout}");
    assert!(progress[0].contains("\"sent\":"), "{stdout}");
    assert!(last_line(&output).contains("\"done\":true"));
}

// What an adaptive run does once its verdict is decided: SIGTERM ends a
// minute of sending within a few seconds, the backlog a slow broker left is
// not waited for, and the done line says the run was stopped and when its
// sending ended.
#[test]
fn sigterm_stops_the_sending_and_the_program_reports() {
    let broker = Broker::start(Behavior {
        latency: Duration::from_millis(20),
        ..Behavior::default()
    });
    let mut child = Command::new(PRODUCER)
        .args([
            "--broker",
            &broker.addr,
            "--mode",
            "steady",
            "--rate",
            "2000",
            "--duration-s",
            "60",
            "--size",
            "64",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    thread::sleep(Duration::from_millis(1500));
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let asked = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if asked.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("producer did not stop within 10 s of SIGTERM");
        }
        thread::sleep(Duration::from_millis(10));
    }
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    let done = last_line(&output);
    assert!(
        done.contains("\"done\":true") && done.ends_with("\"stopped\":true}"),
        "{done}"
    );
    let load_end: f64 = done
        .split("\"load_end_s\":")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no load_end_s in {done}"));
    assert!((1.0..10.0).contains(&load_end), "{done}");
}

// 2000 messages make many requests whatever the client's batch size, so
// the broker's failure rules are sure to trigger.
#[test]
fn broker_errors_exit_1_with_the_reason() {
    let broker = Broker::start(Behavior {
        fail_every: Some(4),
        ..Behavior::default()
    });
    let output = run(&[
        "--broker",
        &broker.addr,
        "--messages",
        "2000",
        "--size",
        "16",
    ]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("injected failure"));
    let done = last_line(&output);
    assert!(
        done.contains("\"done\":true") && !done.contains("\"errors\":0"),
        "{done}"
    );
}

#[test]
fn disconnect_exits_1_with_the_reason() {
    let broker = Broker::start(Behavior {
        disconnect_after: Some(3),
        ..Behavior::default()
    });
    let output = run(&[
        "--broker",
        &broker.addr,
        "--messages",
        "2000",
        "--size",
        "16",
    ]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("disconnected"));
}

#[test]
fn unreachable_broker_exits_1() {
    let addr = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().to_string()
    };
    let output = run(&["--broker", &addr, "--messages", "1"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
}

#[test]
fn bad_flags_exit_2_with_one_line() {
    for args in [
        &[][..],
        &["--broker", "127.0.0.1:1", "--messages", "1000001"],
        &[
            "--broker",
            "127.0.0.1:1",
            "--mode",
            "steady",
            "--rate",
            "100001",
        ],
        &[
            "--broker",
            "127.0.0.1:1",
            "--mode",
            "steady",
            "--duration-s",
            "601",
        ],
        &["--broker", "127.0.0.1:1", "--mode", "trickle"],
        &["--broker", "127.0.0.1:1", "--size", "big"],
        &["--broker", "127.0.0.1:1", "--colour"],
    ] {
        let output = run(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("producer: "), "{stderr}");
        assert!(output.stdout.is_empty());
    }
}
