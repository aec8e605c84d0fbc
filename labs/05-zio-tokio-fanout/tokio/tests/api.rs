//! The API through the router, without a socket: ordering, 400/404/405, healthz,
//! metrics; and over a loopback socket, what a client that hangs up leaves behind.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use http_body_util::BodyExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt;

use replay_tokio::api::{parse_replay, router, AppState};
use replay_tokio::matchlog::MatchLog;
use replay_tokio::metrics::Metrics;

// A small log keeps the tests quick: 4 matches of 3 players x 10 events (30 per match).
const LOG: MatchLog = MatchLog {
    matches: 4,
    players: 3,
    events_per_player: 10,
};

async fn call(uri: &str, capacity: usize) -> (StatusCode, String) {
    let app = router(Arc::new(AppState {
        log: LOG,
        max_count: 20,
        channel_capacity: capacity,
        metrics: Arc::new(Metrics::default()),
    }));
    let response = app
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

fn seqs(body: &str) -> Vec<u32> {
    body.lines()
        .map(|line| {
            let rest = &line[line.find("\"seq\":").unwrap() + 6..];
            rest[..rest.find(',').unwrap()].parse().unwrap()
        })
        .collect()
}

#[tokio::test]
async fn a_replay_returns_exactly_the_requested_events_in_order() {
    // Capacity 2 < 12 events: the producer has to wait for the body again and again.
    for capacity in [2, 1024] {
        let (status, body) = call("/replay?match=2&from=7&count=12", capacity).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(seqs(&body), (7..19).collect::<Vec<_>>());
        let mut expected = Vec::new();
        for seq in 7..19 {
            LOG.event(2, seq).write_line(&mut expected);
        }
        assert_eq!(body.as_bytes(), expected.as_slice());
    }
}

#[tokio::test]
async fn a_replay_may_end_exactly_at_the_end_of_the_match() {
    let (status, body) = call("/replay?match=0&from=25&count=5", 8).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(seqs(&body), vec![25, 26, 27, 28, 29]);
}

#[tokio::test]
async fn bad_input_is_a_400_with_a_reason() {
    for uri in [
        "/replay",
        "/replay?match=1&from=0",
        "/replay?match=x&from=0&count=1",
        "/replay?match=1&from=zero&count=1",
        "/replay?match=4&from=0&count=1",
        "/replay?match=-1&from=0&count=1",
        "/replay?match=1&from=30&count=1",
        "/replay?match=1&from=0&count=0",
        "/replay?match=1&from=0&count=21",
        "/replay?match=1&from=25&count=6",
        "/replay?match=1&from=0&count=99999999999",
    ] {
        let (status, body) = call(uri, 8).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}");
        assert!(!body.trim().is_empty(), "{uri}");
    }
}

#[tokio::test]
async fn an_unknown_path_is_a_404() {
    let (status, _) = call("/nowhere", 8).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_wrong_method_is_a_405_that_names_the_right_one() {
    for (method, uri) in [
        (Method::POST, "/replay?match=0&from=0&count=1"),
        (Method::POST, "/healthz"),
        (Method::DELETE, "/metrics"),
        (Method::PUT, "/healthz"),
    ] {
        let app = router(Arc::new(AppState {
            log: LOG,
            max_count: 20,
            channel_capacity: 8,
            metrics: Arc::new(Metrics::default()),
        }));
        let request = Request::builder()
            .method(method.clone())
            .uri(uri)
            .body(Body::empty())
            .unwrap();
        let response = app.oneshot(request).await.unwrap();
        assert_eq!(
            response.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "{method} {uri}"
        );
        assert_eq!(
            response.headers().get(header::ALLOW).unwrap(),
            "GET,HEAD",
            "{method} {uri}"
        );
    }
}

#[tokio::test]
async fn healthz_says_ok() {
    assert_eq!(
        call("/healthz", 8).await,
        (StatusCode::OK, "ok".to_string())
    );
}

#[tokio::test]
async fn metrics_is_a_json_object_with_counters() {
    let (status, body) = call("/metrics", 8).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.starts_with('{') && body.ends_with('}'), "{body}");
    for key in [
        "requests_served",
        "events_streamed",
        "open_replays",
        "stats_alloc",
    ] {
        assert!(body.contains(&format!("\"{key}\":")), "{key} in {body}");
    }
    #[cfg(feature = "stats-alloc")]
    for key in ["allocated_bytes", "deallocated_bytes", "live_bytes"] {
        assert!(body.contains(&format!("\"{key}\":")), "{key} in {body}");
    }
}

#[test]
fn parse_takes_the_first_value_of_each_parameter() {
    let r = parse_replay("count=3&match=1&from=2&match=3", &LOG, 20).unwrap();
    assert_eq!((r.match_id, r.from, r.count), (1, 2, 3));
}

#[cfg(feature = "stats-alloc")]
#[tokio::test]
async fn live_bytes_are_allocated_minus_deallocated() {
    let (_, body) = call("/metrics", 8).await;
    let field = |key: &str| -> i128 {
        let start = body.find(&format!("\"{key}\":")).unwrap() + key.len() + 3;
        let rest = &body[start..];
        let end = rest.find([',', '}']).unwrap();
        rest[..end].parse().unwrap()
    };
    // The test harness has grown vectors by now, so a realloc counted twice would show.
    assert_ne!(field("reallocated_bytes"), 0, "{body}");
    assert_eq!(
        field("live_bytes"),
        field("allocated_bytes") - field("deallocated_bytes"),
        "{body}"
    );
}

/// A client on a real socket asks for a replay far larger than the socket buffers,
/// reads the start of it and hangs up: the server must drop the replay (its body, and
/// with it the channel and the producer) instead of keeping it for a reader that is gone.
#[tokio::test]
async fn a_client_that_hangs_up_mid_replay_releases_it() {
    // 1,000,000 events of ~80 bytes: about 80 MB, which no socket buffer holds.
    const BIG: MatchLog = MatchLog {
        matches: 1,
        players: 100,
        events_per_player: 10_000,
    };
    let metrics = Arc::new(Metrics::default());
    let app = router(Arc::new(AppState {
        log: BIG,
        max_count: 1_000_000,
        channel_capacity: 64,
        metrics: metrics.clone(),
    }));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let mut client = TcpStream::connect(addr).await.unwrap();
    client
        .write_all(b"GET /replay?match=0&from=0&count=1000000 HTTP/1.1\r\nhost: lab\r\n\r\n")
        .await
        .unwrap();
    let mut start = [0u8; 12];
    client.read_exact(&mut start).await.unwrap();
    assert_eq!(&start, b"HTTP/1.1 200");
    assert_eq!(metrics.open_replays.load(Ordering::Relaxed), 1);

    drop(client);
    let released = async {
        while metrics.open_replays.load(Ordering::Relaxed) != 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), released)
        .await
        .expect("the replay was still open 10 s after its client hung up");
    assert!(
        metrics.events_streamed.load(Ordering::Relaxed) < 1_000_000,
        "the whole replay was streamed before the client hung up; nothing was tested"
    );
    server.abort();
}
