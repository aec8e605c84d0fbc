use std::fmt;

/// Everything that can go wrong between `send` and the broker's ack.
///
/// It is `Clone` because one failure of the background sender has to be
/// reported to every later caller of `send` and to `close`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The TCP connection to the broker could not be opened.
    Connect { addr: String, reason: String },
    /// The broker answered a produce request with an error response; the
    /// messages of that request were not stored.
    Broker(String),
    /// The connection was lost (closed, reset or timed out) and the client
    /// stopped delivering. Messages acknowledged before are stored; the
    /// rest are not.
    Disconnected(String),
    /// The broker sent something that is not a valid response.
    Protocol(String),
    /// A `Config` value is out of range.
    InvalidConfig(String),
    /// The client was closed, or its background sender is gone.
    Closed,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Connect { addr, reason } => {
                write!(f, "cannot connect to broker at {addr}: {reason}")
            }
            Error::Broker(reason) => write!(f, "broker rejected a request: {reason}"),
            Error::Disconnected(reason) => write!(f, "disconnected from broker: {reason}"),
            Error::Protocol(reason) => write!(f, "protocol error: {reason}"),
            Error::InvalidConfig(reason) => write!(f, "invalid config: {reason}"),
            Error::Closed => write!(f, "client is closed"),
        }
    }
}

impl std::error::Error for Error {}
