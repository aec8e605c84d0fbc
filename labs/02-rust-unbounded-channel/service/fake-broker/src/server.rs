use std::future::Future;
use std::io;
use std::time::Duration;

use courier::protocol::{self, Request, Response};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use crate::behavior::{Behavior, Verdict};

/// Accepts connections on `listener` until `shutdown` completes, serving
/// each connection on its own task.
///
/// Connections still open at shutdown are abandoned with the runtime; a
/// fake broker has nothing to persist.
pub async fn serve<F>(listener: TcpListener, behavior: Behavior, shutdown: F)
where
    F: Future<Output = ()>,
{
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => {
                    let behavior = behavior.clone();
                    tokio::spawn(async move {
                        // A client that sends garbage or vanishes only ends
                        // its own connection.
                        if let Err(e) = serve_connection(socket, behavior).await {
                            if e.kind() != io::ErrorKind::UnexpectedEof {
                                eprintln!("fake-broker: connection ended: {e}");
                            }
                        }
                    });
                }
                Err(e) => {
                    // Usually out of file descriptors; back off instead of
                    // spinning, and keep serving existing connections.
                    eprintln!("fake-broker: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            () = &mut shutdown => return,
        }
    }
}

/// Answers requests on one connection, in order, until the client hangs up.
async fn serve_connection(socket: TcpStream, behavior: Behavior) -> io::Result<()> {
    socket.set_nodelay(true)?;
    let mut stream = BufReader::new(socket);
    let mut frame = Vec::new();
    let mut reply = Vec::new();
    let mut number: u64 = 0;

    loop {
        let request = match protocol::read_frame(&mut stream, &mut frame).await {
            Ok(true) => protocol::decode_request(&frame),
            Ok(false) => return Ok(()),
            // A length out of range: answered like any other bad frame.
            Err(e) if e.kind() == io::ErrorKind::InvalidData => Err(e),
            Err(e) => return Err(e),
        };
        number += 1;
        let response = match request {
            Ok(request) => match handle(&request, &behavior, number).await {
                Some(response) => response,
                None => return Ok(()),
            },
            Err(e) => {
                // Tell the client why, then hang up: after a bad frame the
                // stream cannot be trusted to be in sync.
                reply.clear();
                protocol::encode_response(&Response::Error(e.to_string()), &mut reply);
                stream.get_mut().write_all(&reply).await?;
                return Err(e);
            }
        };
        reply.clear();
        protocol::encode_response(&response, &mut reply);
        stream.get_mut().write_all(&reply).await?;
    }
}

/// Charges the request's cost and returns the answer, or `None` to hang up.
async fn handle(request: &Request, behavior: &Behavior, number: u64) -> Option<Response> {
    let verdict = behavior.verdict(number);
    if verdict == Verdict::Disconnect {
        return None;
    }
    let cost = behavior.cost(request.message_count());
    if !cost.is_zero() {
        tokio::time::sleep(cost).await;
    }
    Some(match verdict {
        Verdict::Fail(reason) => Response::Error(reason),
        _ => Response::Ack(request.message_count() as u32),
    })
}
