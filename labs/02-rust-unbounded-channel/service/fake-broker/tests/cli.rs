//! The `fake-broker` binary: flags, the ready line, and failure injection
//! over a real socket.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use courier::protocol::{self, Response};

const BROKER: &str = env!("CARGO_BIN_EXE_fake-broker");

/// Kills the broker even when an assertion fails.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the broker on a free port and returns it with its address,
/// read from the ready line.
fn start(extra: &[&str]) -> (Running, String) {
    let child = Command::new(BROKER)
        .args(["--listen", "127.0.0.1:0"])
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut running = Running(child);
    let stderr = running.0.stderr.take().unwrap();
    // Reading the line could block forever if the broker never gets ready;
    // do it on a thread and give up after a deadline.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stderr).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("no ready line");
    let addr = line
        .split_whitespace()
        .skip_while(|word| *word != "on")
        .nth(1)
        .unwrap_or_else(|| panic!("unexpected ready line {line:?}"))
        .to_owned();
    (running, addr)
}

fn produce(stream: &mut TcpStream, payload: &[u8]) -> Response {
    let mut out = Vec::new();
    protocol::encode_produce(payload, &mut out);
    stream.write_all(&out).unwrap();
    read_response(stream)
}

fn read_response(stream: &mut TcpStream) -> Response {
    let mut prefix = [0u8; 4];
    stream.read_exact(&mut prefix).unwrap();
    let mut frame = vec![0u8; u32::from_be_bytes(prefix) as usize];
    stream.read_exact(&mut frame).unwrap();
    protocol::decode_response(&frame).unwrap()
}

fn connect(addr: &str) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

#[test]
fn acks_and_injects_failures() {
    let (_broker, addr) = start(&["--latency-ms", "0", "--fail-every", "2"]);
    let mut stream = connect(&addr);
    assert_eq!(produce(&mut stream, b"one"), Response::Ack(1));
    assert!(matches!(produce(&mut stream, b"two"), Response::Error(_)));
    assert_eq!(produce(&mut stream, b"three"), Response::Ack(1));
}

#[test]
fn serves_several_connections() {
    let (_broker, addr) = start(&[]);
    let mut first = connect(&addr);
    let mut second = connect(&addr);
    assert_eq!(produce(&mut second, b"b"), Response::Ack(1));
    assert_eq!(produce(&mut first, b"a"), Response::Ack(1));
}

/// Panics unless the broker has closed `stream` (or closes it before the
/// read timeout).
fn assert_hung_up(stream: &mut TcpStream) {
    let mut byte = [0u8; 1];
    // A bare `read` returns EINTR when a signal lands mid-call (the other tests
    // spawn and reap broker processes); only EOF or data is an answer here.
    let n = loop {
        match stream.read(&mut byte) {
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            other => break other.unwrap(),
        }
    };
    assert_eq!(n, 0, "expected EOF");
}

#[test]
fn hangs_up_after_the_limit() {
    let (_broker, addr) = start(&["--disconnect-after", "1"]);
    let mut stream = connect(&addr);
    assert_eq!(produce(&mut stream, b"kept"), Response::Ack(1));
    let mut out = Vec::new();
    protocol::encode_produce(b"dropped", &mut out);
    stream.write_all(&out).unwrap();
    assert_hung_up(&mut stream);
}

#[test]
fn refuses_a_frame_over_the_cap_and_hangs_up() {
    let (_broker, addr) = start(&[]);
    let mut stream = connect(&addr);
    let len = u32::try_from(protocol::MAX_FRAME_LEN + 1).unwrap();
    stream.write_all(&len.to_be_bytes()).unwrap();
    match read_response(&mut stream) {
        Response::Error(reason) => assert!(reason.contains(&len.to_string()), "{reason}"),
        other => panic!("expected an error response, got {other:?}"),
    }
    assert_hung_up(&mut stream);
    // Only that connection ended.
    assert_eq!(produce(&mut connect(&addr), b"next"), Response::Ack(1));
}

#[test]
fn hangs_up_on_a_frame_cut_short() {
    let (_broker, addr) = start(&[]);
    let mut stream = connect(&addr);
    let mut out = Vec::new();
    protocol::encode_produce(&[7; 100], &mut out);
    stream.write_all(&out[..50]).unwrap();
    stream.shutdown(Shutdown::Write).unwrap();
    assert_hung_up(&mut stream);
}

#[test]
fn bad_flags_exit_2_with_one_clear_line() {
    for args in [
        &["--listen", "0.0.0.0:9092"][..],
        &["--listen", "192.168.1.10:9092"],
        &["--listen", "nonsense"],
        &["--latency-ms", "soon"],
        &["--fail-every", "0"],
        &["--unknown"],
    ] {
        let output = Command::new(BROKER).args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.starts_with("fake-broker: "), "{args:?}: {stderr}");
    }
    let output = Command::new(BROKER)
        .args(["--listen", "0.0.0.0:9092"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&output.stderr).contains("non-loopback"));
}
