//! Delivery guarantees of `Client`: order, flush on close, and clear,
//! prompt errors when the broker misbehaves.

mod support;

use std::time::Duration;

use courier::{Client, Config, Error};
use support::{within, Script, ScriptedBroker, DEADLINE};

fn message(i: usize) -> Vec<u8> {
    format!("message-{i:05}").into_bytes()
}

#[test]
fn messages_reach_the_broker_in_send_order() {
    let broker = ScriptedBroker::start(Script::default());
    let addr = broker.addr.clone();
    let report = within(DEADLINE, move || {
        let client = Client::connect(&addr, Config::default()).unwrap();
        for i in 0..300 {
            client.send(&message(i)).unwrap();
        }
        client.close()
    })
    .unwrap();
    assert_eq!(report.accepted, 300);
    assert_eq!(report.acked, 300);
    let expected: Vec<Vec<u8>> = (0..300).map(message).collect();
    assert_eq!(broker.stored(), expected);
}

#[test]
fn close_waits_until_everything_accepted_is_acknowledged() {
    // A slow broker guarantees messages are still queued when close starts.
    let broker = ScriptedBroker::start(Script {
        latency: Duration::from_millis(2),
        ..Script::default()
    });
    let addr = broker.addr.clone();
    let report = within(DEADLINE, move || {
        let client = Client::connect(&addr, Config::default()).unwrap();
        for i in 0..100 {
            client.send(&message(i)).unwrap();
        }
        client.close()
    })
    .unwrap();
    assert_eq!(report.acked, 100);
    assert_eq!(
        broker.stored().len(),
        100,
        "close returned before the flush"
    );
}

/// Sends `message(i)` and waits for the broker's answer, so the outcome of
/// each message is known before the next one is sent.
fn send_and_wait(client: &Client, i: usize) -> Result<(), Error> {
    let stats = client.stats();
    client.send(&message(i))?;
    support::wait_until(|| {
        let report = stats.snapshot();
        report.acked + report.failed == report.accepted || stats.fatal_error().is_some()
    });
    Ok(())
}

#[test]
fn broker_errors_are_reported_without_hanging() {
    let broker = ScriptedBroker::start(Script {
        fail_every: Some(2),
        ..Script::default()
    });
    let addr = broker.addr.clone();
    let (result, report) = within(DEADLINE, move || {
        let client = Client::connect(&addr, Config::default()).unwrap();
        let stats = client.stats();
        for i in 0..10 {
            send_and_wait(&client, i).unwrap();
        }
        (client.close(), stats.snapshot())
    });
    match result {
        Err(Error::Broker(reason)) => assert!(reason.contains("scripted failure"), "{reason}"),
        other => panic!("expected a broker error, got {other:?}"),
    }
    assert_eq!((report.accepted, report.acked, report.failed), (10, 5, 5));
    let kept: Vec<Vec<u8>> = (0..10).step_by(2).map(message).collect();
    assert_eq!(broker.stored(), kept, "rejected messages are not stored");
}

#[test]
fn disconnect_is_reported_and_acknowledged_messages_are_kept() {
    let broker = ScriptedBroker::start(Script {
        disconnect_after: Some(5),
        ..Script::default()
    });
    let addr = broker.addr.clone();
    let (result, report) = within(DEADLINE, move || {
        let client = Client::connect(&addr, Config::default()).unwrap();
        let stats = client.stats();
        let mut failure = None;
        for i in 0..50 {
            // Once the sender has stopped, send fails with the reason.
            if let Err(e) = send_and_wait(&client, i) {
                failure = Some(e);
                break;
            }
        }
        assert!(
            matches!(failure, Some(Error::Disconnected(_))),
            "send kept working after the disconnect: {failure:?}"
        );
        (client.close(), stats.snapshot())
    });
    assert!(
        matches!(result, Err(Error::Disconnected(_))),
        "expected a disconnect, got {result:?}"
    );
    assert_eq!(report.acked, 5, "{report:?}");
    // Exactly the acknowledged messages are at the broker, in order.
    let acked: Vec<Vec<u8>> = (0..5).map(message).collect();
    assert_eq!(broker.stored(), acked);
}

#[test]
fn send_after_the_connection_died_returns_the_reason() {
    let broker = ScriptedBroker::start(Script {
        disconnect_after: Some(0),
        ..Script::default()
    });
    let addr = broker.addr.clone();
    within(DEADLINE, move || {
        let client = Client::connect(&addr, Config::default()).unwrap();
        let stats = client.stats();
        client.send(b"doomed").unwrap();
        support::wait_until(|| stats.fatal_error().is_some());
        assert!(matches!(client.send(b"late"), Err(Error::Disconnected(_))));
        assert!(matches!(client.close(), Err(Error::Disconnected(_))));
    });
}

#[test]
fn a_broker_that_never_answers_times_out() {
    let broker = ScriptedBroker::start(Script {
        start_paused: true,
        ..Script::default()
    });
    let addr = broker.addr.clone();
    let result = within(DEADLINE, move || {
        let config = Config::default().with_request_timeout(Duration::from_millis(200));
        let client = Client::connect(&addr, config).unwrap();
        client.send(b"into the void").unwrap();
        client.close()
    });
    match result {
        Err(Error::Disconnected(reason)) => assert!(reason.contains("no response"), "{reason}"),
        other => panic!("expected a timeout, got {other:?}"),
    }
}

#[test]
fn connect_to_a_closed_port_fails_clearly() {
    let addr = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().to_string()
    };
    let result = within(DEADLINE, move || {
        Client::connect(&addr, Config::default()).map(|_| ())
    });
    match result {
        Err(e @ Error::Connect { .. }) => assert!(e.to_string().contains("cannot connect")),
        other => panic!("expected a connect error, got {other:?}"),
    }
}

#[test]
fn zero_timeout_is_rejected() {
    let config = Config::default().with_request_timeout(Duration::ZERO);
    assert!(matches!(
        Client::connect("127.0.0.1:1", config),
        Err(Error::InvalidConfig(_))
    ));
}
