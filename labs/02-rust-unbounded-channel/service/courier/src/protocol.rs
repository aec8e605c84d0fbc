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

/// The largest frame either side accepts; a longer announced length is an
/// `InvalidData` error that ends the connection.
///
/// The lab's frames are far smaller: its runs send 1 KiB messages, and the
/// producer's largest message (`--size`) is 1 MiB. The cap bounds what one
/// peer can make the other hold, and [`read_frame`] only holds what has
/// arrived.
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
/// frames, an `UnexpectedEof` error when it closed in the middle of one, and
/// an `InvalidData` error for a length of 0 or over [`MAX_FRAME_LEN`].
///
/// The body is read as it arrives, so `frame` grows with the bytes received,
/// not with the length announced: a peer that announces a large frame and
/// sends nothing costs nothing.
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
    let read = reader.take(len as u64).read_to_end(frame).await?;
    if read < len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("frame of {len} bytes ended after {read}"),
        ));
    }
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
    use tokio::io::AsyncWriteExt;

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

    /// A length prefix followed by `body`.
    fn announce(len: usize, body: &[u8]) -> Vec<u8> {
        let mut out = u32::try_from(len).unwrap().to_be_bytes().to_vec();
        out.extend_from_slice(body);
        out
    }

    #[tokio::test]
    async fn frames_arriving_in_pieces_are_read_whole_and_in_turn() {
        let mut wire = Vec::new();
        encode_produce(b"first", &mut wire);
        encode_response(&Response::Ack(7), &mut wire);
        let (mut writer, mut reader) = tokio::io::duplex(64);
        let sending = tokio::spawn(async move {
            for piece in wire.chunks(3) {
                writer.write_all(piece).await.unwrap();
            }
        });
        let mut frame = Vec::new();
        assert!(read_frame(&mut reader, &mut frame).await.unwrap());
        assert_eq!(
            decode_request(&frame).unwrap(),
            Request::Produce(b"first".to_vec())
        );
        assert!(read_frame(&mut reader, &mut frame).await.unwrap());
        assert_eq!(decode_response(&frame).unwrap(), Response::Ack(7));
        sending.await.unwrap();
        assert!(!read_frame(&mut reader, &mut frame).await.unwrap());
    }

    #[tokio::test]
    async fn a_length_over_the_cap_is_invalid_data_and_nothing_is_allocated() {
        for len in [MAX_FRAME_LEN + 1, u32::MAX as usize, 0] {
            let wire = announce(len, b"\x01some bytes");
            let mut frame = Vec::new();
            let error = read_frame(&mut wire.as_slice(), &mut frame)
                .await
                .unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidData, "{len}");
            assert_eq!(frame.capacity(), 0, "{len}");
        }
    }

    #[tokio::test]
    async fn an_announced_frame_is_not_allocated_before_it_arrives() {
        // The largest legal announcement, then 10 bytes and EOF: the frame
        // holds what came, not the 64 MiB that was promised.
        let wire = announce(MAX_FRAME_LEN, &[PRODUCE; 10]);
        let mut frame = Vec::new();
        let error = read_frame(&mut wire.as_slice(), &mut frame)
            .await
            .unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof);
        assert!(frame.capacity() < 1024, "capacity {}", frame.capacity());
    }

    #[tokio::test]
    async fn a_frame_cut_short_by_eof_is_an_error_not_a_hang() {
        let (mut writer, mut reader) = tokio::io::duplex(64);
        writer
            .write_all(&announce(100, &[PRODUCE; 10]))
            .await
            .unwrap();
        drop(writer);
        let mut frame = Vec::new();
        let read = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            read_frame(&mut reader, &mut frame),
        );
        let error = read.await.expect("read_frame hung").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof);
    }
}
