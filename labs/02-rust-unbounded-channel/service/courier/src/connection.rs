use std::io;
use std::time::Duration;

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::time::timeout;

use crate::protocol::{self, Response};
use crate::{Config, Error};

/// One TCP connection to the broker.
///
/// It exists so the client deals in messages and acks rather than bytes:
/// it owns the encode buffer, the framing, and the per-request deadline.
pub(crate) struct Connection {
    stream: BufReader<TcpStream>,
    /// Reused for every frame in both directions to avoid an allocation
    /// per request.
    buffer: Vec<u8>,
    request_timeout: Duration,
}

impl Connection {
    pub(crate) async fn connect(addr: &str, config: &Config) -> Result<Connection, Error> {
        let connect_error = |reason: String| Error::Connect {
            addr: addr.to_owned(),
            reason,
        };
        let stream = timeout(config.request_timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| connect_error("timed out".into()))?
            .map_err(|e| connect_error(e.to_string()))?;
        // Requests are small and answered one by one; waiting for Nagle
        // would add delay to every round trip.
        stream
            .set_nodelay(true)
            .map_err(|e| connect_error(e.to_string()))?;
        Ok(Connection {
            stream: BufReader::new(stream),
            buffer: Vec::new(),
            request_timeout: config.request_timeout,
        })
    }

    /// Sends one message in a single produce request and waits for the answer.
    pub(crate) async fn produce(&mut self, payload: &[u8]) -> Result<(), Error> {
        self.buffer.clear();
        protocol::encode_produce(payload, &mut self.buffer);
        self.round_trip(1).await
    }

    /// Writes the request in `self.buffer` and reads the broker's answer,
    /// which must acknowledge exactly `expected` messages.
    async fn round_trip(&mut self, expected: u32) -> Result<(), Error> {
        let response = match timeout(self.request_timeout, self.exchange()).await {
            Ok(Ok(response)) => response,
            Ok(Err(e)) if e.kind() == io::ErrorKind::InvalidData => {
                return Err(Error::Protocol(e.to_string()))
            }
            Ok(Err(e)) => return Err(Error::Disconnected(e.to_string())),
            Err(_) => {
                return Err(Error::Disconnected(format!(
                    "no response within {:?}",
                    self.request_timeout
                )))
            }
        };
        match response {
            Response::Ack(count) if count == expected => Ok(()),
            Response::Ack(count) => Err(Error::Protocol(format!(
                "broker acknowledged {count} messages, expected {expected}"
            ))),
            Response::Error(reason) => Err(Error::Broker(reason)),
        }
    }

    async fn exchange(&mut self) -> io::Result<Response> {
        self.stream.get_mut().write_all(&self.buffer).await?;
        if !protocol::read_frame(&mut self.stream, &mut self.buffer).await? {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "broker closed the connection",
            ));
        }
        protocol::decode_response(&self.buffer)
    }
}
