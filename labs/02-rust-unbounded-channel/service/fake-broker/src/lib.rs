//! A stand-in message broker for the Leak Lab.
//!
//! It speaks the `courier` wire protocol on loopback TCP and answers each
//! request after a fixed latency, as a broker across a network would. It can
//! also fail requests or drop connections on purpose, for the tests.
//!
//! The server is a library so tests can run it in-process; `main.rs` only
//! parses flags and wires up Ctrl-C.

mod behavior;
mod cli;
mod server;

pub use behavior::Behavior;
pub use cli::{parse_args, CliError, Settings, USAGE};
pub use server::serve;
