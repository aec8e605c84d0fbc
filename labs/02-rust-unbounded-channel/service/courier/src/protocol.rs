//! The wire protocol between the client and the broker.
//!
//! Every frame is `[len: u32 big-endian][kind: u8][body]`, where `len`
//! counts the kind byte and the body. Requests:
//!
//! * `PRODUCE` (1): the body is one message.
//! * `PRODUCE_BATCH` (2): `[count: u32]` then `count` times `[len: u32][bytes]`.
//!
//! Responses, one per request and in request order:
//!
//! * `ACK` (0x10): `[count: u32]`, the number of messages stored.
//! * `ERROR` (0x11): a UTF-8 reason; none of the request's messages were stored.
//!
//! Encoding works on plain byte vectors so both ends can reuse one buffer
//! per connection instead of allocating per frame.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt};

/// Frames larger than this are refused, so a corrupt length prefix cannot
/// make either side allocate gigabytes.
pub const MAX_FRAME_LEN: usize = 64 * 1024 * 1024;

const PRODUCE: u8 = 1;
const PRODUCE_BATCH: u8 = 2;
const ACK: u8 = 0x10;
const ERROR: u8 = 0x11;

/// A decoded request, as the broker sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// One message in its own request.
    Produce(Vec<u8>),
    /// Several messages that the broker stores, or rejects, together.
    ProduceBatch(Vec<Vec<u8>>),
}

impl Request {
    /// How many messages the request carries; an ack must repeat this count.
    pub fn message_count(&self) -> usize {
        match self {
            Request::Produce(_) => 1,
            Request::ProduceBatch(messages) => messages.len(),
        }
    }

    /// The messages in the order the client sent them.
    pub fn into_messages(self) -> Vec<Vec<u8>> {
        match self {
            Request::Produce(message) => vec![message],
            Request::ProduceBatch(messages) => messages,
        }
    }
}

/// A decoded response, as the client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// The broker stored this many messages.
    Ack(u32),
    /// The broker stored nothing from the request, for this reason.
    Error(String),
}

/// Appends a single-message produce request to `out`.
pub fn encode_produce(payload: &[u8], out: &mut Vec<u8>) {
    let start = begin_frame(out, PRODUCE);
    out.extend_from_slice(payload);
    end_frame(out, start);
}

/// Appends a batch produce request carrying `payloads`, in order, to `out`.
pub fn encode_produce_batch<'a, I>(payloads: I, out: &mut Vec<u8>)
where
    I: IntoIterator<Item = &'a [u8]>,
{
    let start = begin_frame(out, PRODUCE_BATCH);
    let count_at = out.len();
    out.extend_from_slice(&0u32.to_be_bytes());
    let mut count: u32 = 0;
    for payload in payloads {
        out.extend_from_slice(&len_u32(payload.len()).to_be_bytes());
        out.extend_from_slice(payload);
        count += 1;
    }
    out[count_at..count_at + 4].copy_from_slice(&count.to_be_bytes());
    end_frame(out, start);
}

/// Appends `response` to `out`.
pub fn encode_response(response: &Response, out: &mut Vec<u8>) {
    match response {
        Response::Ack(count) => {
            let start = begin_frame(out, ACK);
            out.extend_from_slice(&count.to_be_bytes());
            end_frame(out, start);
        }
        Response::Error(reason) => {
            let start = begin_frame(out, ERROR);
            out.extend_from_slice(reason.as_bytes());
            end_frame(out, start);
        }
    }
}

/// Decodes a frame (kind byte and body, without the length prefix) as a request.
pub fn decode_request(frame: &[u8]) -> io::Result<Request> {
    let (&kind, mut body) = frame.split_first().ok_or_else(|| invalid("empty frame"))?;
    match kind {
        PRODUCE => Ok(Request::Produce(body.to_vec())),
        PRODUCE_BATCH => {
            let count = take_u32(&mut body)? as usize;
            // Every message needs at least its 4-byte length, which bounds
            // the count by the bytes actually received.
            if count > body.len() / 4 {
                return Err(invalid("batch count exceeds frame size"));
            }
            let mut messages = Vec::with_capacity(count);
            for _ in 0..count {
                let len = take_u32(&mut body)? as usize;
                if len > body.len() {
                    return Err(invalid("batch message exceeds frame size"));
                }
                let (message, rest) = body.split_at(len);
                messages.push(message.to_vec());
                body = rest;
            }
            if !body.is_empty() {
                return Err(invalid("trailing bytes after batch"));
            }
            Ok(Request::ProduceBatch(messages))
        }
        other => Err(invalid(&format!("unknown request kind {other:#04x}"))),
    }
}

/// Decodes a frame (kind byte and body, without the length prefix) as a response.
pub fn decode_response(frame: &[u8]) -> io::Result<Response> {
    let (&kind, mut body) = frame.split_first().ok_or_else(|| invalid("empty frame"))?;
    match kind {
        ACK => {
            let count = take_u32(&mut body)?;
            if !body.is_empty() {
                return Err(invalid("trailing bytes after ack"));
            }
            Ok(Response::Ack(count))
        }
        ERROR => Ok(Response::Error(String::from_utf8_lossy(body).into_owned())),
        other => Err(invalid(&format!("unknown response kind {other:#04x}"))),
    }
}

/// Reads one frame into `frame` (replacing its contents).
///
/// Returns `Ok(false)` when the peer closed the stream cleanly between
/// frames, and an `UnexpectedEof` error when it closed in the middle of one.
pub async fn read_frame<R>(reader: &mut R, frame: &mut Vec<u8>) -> io::Result<bool>
where
    R: AsyncRead + Unpin,
{
    let mut prefix = [0u8; 4];
    let mut filled = 0;
    while filled < prefix.len() {
        let n = reader.read(&mut prefix[filled..]).await?;
        if n == 0 {
            return if filled == 0 {
                Ok(false)
            } else {
                Err(io::ErrorKind::UnexpectedEof.into())
            };
        }
        filled += n;
    }
    let len = u32::from_be_bytes(prefix) as usize;
    if len == 0 || len > MAX_FRAME_LEN {
        return Err(invalid(&format!("frame length {len} out of range")));
    }
    frame.clear();
    frame.resize(len, 0);
    reader.read_exact(frame).await?;
    Ok(true)
}

fn begin_frame(out: &mut Vec<u8>, kind: u8) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0, 0, 0, 0, kind]);
    start
}

fn end_frame(out: &mut [u8], start: usize) {
    let len = len_u32(out.len() - start - 4);
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
}

fn len_u32(len: usize) -> u32 {
    // MAX_FRAME_LEN is far below u32::MAX; anything bigger is a caller bug.
    assert!(
        len <= MAX_FRAME_LEN,
        "frame of {len} bytes exceeds MAX_FRAME_LEN"
    );
    len as u32
}

fn take_u32(body: &mut &[u8]) -> io::Result<u32> {
    if body.len() < 4 {
        return Err(invalid("truncated u32"));
    }
    let (head, rest) = body.split_at(4);
    *body = rest;
    Ok(u32::from_be_bytes([head[0], head[1], head[2], head[3]]))
}

fn invalid(reason: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, reason.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(frame: &[u8]) -> &[u8] {
        let len = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
        assert_eq!(len, frame.len() - 4);
        &frame[4..]
    }

    #[test]
    fn produce_round_trips() {
        let mut out = Vec::new();
        encode_produce(b"hello", &mut out);
        assert_eq!(
            decode_request(body(&out)).unwrap(),
            Request::Produce(b"hello".to_vec())
        );
    }

    #[test]
    fn batch_round_trips_in_order() {
        let messages: Vec<&[u8]> = vec![b"a", b"", b"ccc"];
        let mut out = Vec::new();
        encode_produce_batch(messages.iter().copied(), &mut out);
        let decoded = decode_request(body(&out)).unwrap();
        assert_eq!(decoded.message_count(), 3);
        assert_eq!(
            decoded.into_messages(),
            vec![b"a".to_vec(), Vec::new(), b"ccc".to_vec()]
        );
    }

    #[test]
    fn responses_round_trip() {
        for response in [Response::Ack(64), Response::Error("disk full".into())] {
            let mut out = Vec::new();
            encode_response(&response, &mut out);
            assert_eq!(decode_response(body(&out)).unwrap(), response);
        }
    }

    #[test]
    fn lying_batch_count_is_rejected() {
        let mut frame = vec![PRODUCE_BATCH];
        frame.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(decode_request(&frame).is_err());
    }
}
