use std::sync::mpsc;
use std::thread;

use tokio::runtime::{self, Runtime};

use crate::connection::Connection;
use crate::{Config, Error, Report, Stats};

/// The synchronous face of the library.
///
/// Callers that are not async (FFI users, plain threads) hand it bytes with
/// [`send`](Client::send) and carry on; a background sender owns the broker
/// connection and delivers the messages in the order they were accepted.
///
/// Shutdown is explicit: [`close`](Client::close) stops accepting, waits for
/// every accepted message to be delivered and returns the final counts.
/// Dropping a `Client` without closing it lets the background sender finish
/// on its own, but nobody learns whether delivery succeeded.
pub struct Client {
    outbox: mpsc::Sender<Vec<u8>>,
    sender: thread::JoinHandle<()>,
    stats: Stats,
}

impl Client {
    /// Connects to the broker at `broker_addr` (`host:port`) and starts the
    /// background sender.
    pub fn connect(broker_addr: &str, config: Config) -> Result<Client, Error> {
        config.validate()?;
        let runtime = runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Connect {
                addr: broker_addr.to_owned(),
                reason: format!("cannot start runtime: {e}"),
            })?;
        // Connect before spawning so a wrong address fails here, not on
        // some later send.
        let connection = runtime.block_on(Connection::connect(broker_addr, &config))?;

        let (outbox, inbox) = mpsc::channel();
        let stats = Stats::default();
        let sender_stats = stats.clone();
        let sender = thread::Builder::new()
            .name("courier-sender".into())
            .spawn(move || deliver(runtime, connection, inbox, sender_stats))
            .map_err(|e| Error::Connect {
                addr: broker_addr.to_owned(),
                reason: format!("cannot start sender thread: {e}"),
            })?;

        Ok(Client {
            outbox,
            sender,
            stats,
        })
    }

    /// Copies `payload` into an owned message and queues it for delivery.
    ///
    /// Returns as soon as the message is queued; `Ok` means accepted, not
    /// yet stored. Fails if delivery has stopped (the error says why).
    pub fn send(&self, payload: &[u8]) -> Result<(), Error> {
        self.stats.record_accepted();
        if self.outbox.send(payload.to_vec()).is_err() {
            self.stats.record_refused();
            return Err(self.stats.fatal_error().unwrap_or(Error::Closed));
        }
        Ok(())
    }

    /// A live view of the counters, usable from other threads while the
    /// client runs and after it is closed.
    pub fn stats(&self) -> Stats {
        self.stats.clone()
    }

    /// Stops accepting messages and waits until every accepted message has
    /// been acknowledged or delivery has failed.
    ///
    /// Returns the final counts when all accepted messages were stored;
    /// otherwise the first broker error, or the error that stopped delivery.
    pub fn close(self) -> Result<Report, Error> {
        // Dropping the only sender ends the background loop once it has
        // drained what is already queued.
        drop(self.outbox);
        if self.sender.join().is_err() {
            self.stats.record_fatal(Error::Closed);
        }
        self.stats.outcome()
    }
}

/// The background sender: takes messages off the queue in order and sends
/// each one to the broker.
fn deliver(
    runtime: Runtime,
    mut connection: Connection,
    inbox: mpsc::Receiver<Vec<u8>>,
    stats: Stats,
) {
    // The loop ends when the Client is closed and the queue is empty.
    for message in inbox {
        match runtime.block_on(connection.produce(&message)) {
            Ok(()) => stats.record_acked(1),
            // The broker refused this message but the connection is fine.
            Err(error @ Error::Broker(_)) => stats.record_rejected(1, error),
            Err(fatal) => {
                // The connection is gone or out of sync; whatever is still
                // queued cannot be delivered and is dropped with `inbox`.
                stats.record_fatal(fatal);
                return;
            }
        }
    }
}
