//! The HTTP API, identical to the ZIO service's:
//!
//! - `GET /replay?match=<id>&from=<n>&count=<k>`: k events as newline-delimited JSON,
//!   streamed; 400 with a one-line reason on bad parameters;
//! - `GET /healthz`: 200 "ok";
//! - `GET /metrics`: one JSON object of counters (and allocator bytes with `stats-alloc`);
//! - another method on one of these paths: 405 with `Allow: GET,HEAD` (axum's method
//!   router);
//! - anything else: 404.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::matchlog::MatchLog;
use crate::metrics::Metrics;
use crate::replay;

/// What the handlers share.
pub struct AppState {
    pub log: MatchLog,
    pub max_count: u32,
    pub channel_capacity: usize,
    pub metrics: Arc<Metrics>,
}

#[derive(Debug, PartialEq, Eq)]
pub struct ReplayRequest {
    pub match_id: u32,
    pub from: u32,
    pub count: u32,
}

pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/metrics", get(metrics))
        .route("/replay", get(replay_handler))
        .fallback(|| async { (StatusCode::NOT_FOUND, "not found\n") })
        .with_state(state)
}

async fn metrics(State(st): State<Arc<AppState>>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        st.metrics.json(),
    )
        .into_response()
}

async fn replay_handler(State(st): State<Arc<AppState>>, RawQuery(query): RawQuery) -> Response {
    let query = query.unwrap_or_default();
    match parse_replay(&query, &st.log, st.max_count) {
        Err(reason) => (StatusCode::BAD_REQUEST, reason + "\n").into_response(),
        Ok(r) => {
            st.metrics.requests_served.fetch_add(1, Ordering::Relaxed);
            let body = replay::start(
                st.log,
                r.match_id,
                r.from,
                r.count,
                st.channel_capacity,
                st.metrics.clone(),
            );
            (
                [(header::CONTENT_TYPE, "application/x-ndjson")],
                Body::from_stream(body),
            )
                .into_response()
        }
    }
}

/// The first value of `name` in a raw query string.
fn param<'a>(query: &'a str, name: &str) -> Option<&'a str> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Checks a replay query against the match log; the error is the 400's message.
pub fn parse_replay(query: &str, log: &MatchLog, max_count: u32) -> Result<ReplayRequest, String> {
    let int = |name: &str| -> Result<i64, String> {
        let raw = param(query, name).ok_or_else(|| format!("missing parameter {name}"))?;
        raw.parse::<i32>()
            .map(i64::from)
            .map_err(|_| format!("parameter {name}: not an integer: {raw}"))
    };
    let (m, from, count) = (int("match")?, int("from")?, int("count")?);
    let per_match = i64::from(log.events_per_match());
    if m < 0 || m >= i64::from(log.matches) {
        return Err(format!("match {m}: must be 0..{}", log.matches - 1));
    }
    if from < 0 || from >= per_match {
        return Err(format!("from {from}: must be 0..{}", per_match - 1));
    }
    if count < 1 || count > i64::from(max_count) {
        return Err(format!("count {count}: must be 1..{max_count}"));
    }
    if from + count > per_match {
        return Err(format!(
            "from {from} + count {count}: past the end of the match ({per_match} events)"
        ));
    }
    Ok(ReplayRequest {
        match_id: m as u32,
        from: from as u32,
        count: count as u32,
    })
}
