//! Courier: a synchronous client for the Leak Lab broker.
//!
//! Callers hand [`Client::send`] a byte slice and get control back at once;
//! a background sender delivers the messages to the broker over TCP. Call
//! [`Client::close`] to wait until everything accepted has been acknowledged.
//!
//! The wire format shared with the broker lives in [`protocol`].

mod client;
mod config;
mod connection;
mod error;
pub mod protocol;
mod stats;

pub use client::Client;
pub use config::Config;
pub use error::Error;
pub use stats::{Report, Stats};
