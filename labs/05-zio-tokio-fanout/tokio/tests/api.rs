//! The API through the router, without a socket: ordering, 400/404, healthz, metrics.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
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
