use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use crate::Behavior;

/// Shown with every usage error.
pub const USAGE: &str = "usage: fake-broker [--listen 127.0.0.1:PORT] [--latency-ms MS] \
[--per-message-us US] [--fail-every N] [--disconnect-after N]";

const DEFAULT_LISTEN: &str = "127.0.0.1:9092";
const DEFAULT_LATENCY_MS: u64 = 1;
/// Ten seconds per request is already absurd for a lab broker; larger
/// values are almost certainly typos.
const MAX_LATENCY_MS: u64 = 10_000;
const MAX_PER_MESSAGE_US: u64 = 10_000;

/// Everything the command line decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub listen: SocketAddr,
    pub behavior: Behavior,
}

/// A bad command line: the message is one line, for stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError(pub String);

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Parses the flags (without the program name).
///
/// Only loopback addresses are accepted: the broker has no authentication
/// and exists only for local labs.
pub fn parse_args<I>(args: I) -> Result<Settings, CliError>
where
    I: IntoIterator<Item = String>,
{
    let mut listen = DEFAULT_LISTEN.to_owned();
    let mut behavior = Behavior {
        latency: Duration::from_millis(DEFAULT_LATENCY_MS),
        ..Behavior::default()
    };
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| CliError(format!("{flag} needs a value")))
        };
        match flag.as_str() {
            "--listen" => listen = value()?,
            "--latency-ms" => {
                let ms = number(&flag, &value()?, 0, MAX_LATENCY_MS)?;
                behavior.latency = Duration::from_millis(ms);
            }
            "--per-message-us" => {
                let us = number(&flag, &value()?, 0, MAX_PER_MESSAGE_US)?;
                behavior.per_message = Duration::from_micros(us);
            }
            "--fail-every" => behavior.fail_every = Some(number(&flag, &value()?, 1, u64::MAX)?),
            "--disconnect-after" => {
                behavior.disconnect_after = Some(number(&flag, &value()?, 0, u64::MAX)?)
            }
            "-h" | "--help" => return Err(CliError(USAGE.to_owned())),
            other => return Err(CliError(format!("unknown flag {other}"))),
        }
    }
    let listen: SocketAddr = listen
        .parse()
        .map_err(|_| CliError(format!("--listen wants IP:PORT, got {listen:?}")))?;
    if !listen.ip().is_loopback() {
        return Err(CliError(format!(
            "refusing to listen on non-loopback address {listen}: use 127.0.0.1 or [::1]"
        )));
    }
    Ok(Settings { listen, behavior })
}

fn number(flag: &str, text: &str, min: u64, max: u64) -> Result<u64, CliError> {
    match text.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(CliError(format!(
            "{flag} wants a whole number in {min}..={max}, got {text:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Settings, CliError> {
        parse_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn defaults() {
        let settings = parse(&[]).unwrap();
        assert_eq!(settings.listen, DEFAULT_LISTEN.parse().unwrap());
        assert_eq!(settings.behavior.latency, Duration::from_millis(1));
        assert_eq!(settings.behavior.fail_every, None);
    }

    #[test]
    fn refuses_non_loopback() {
        let err = parse(&["--listen", "0.0.0.0:9092"]).unwrap_err();
        assert!(err.0.contains("non-loopback"), "{err}");
    }

    #[test]
    fn rejects_bad_numbers_and_unknown_flags() {
        assert!(parse(&["--latency-ms", "-1"]).is_err());
        assert!(parse(&["--fail-every", "0"]).is_err());
        assert!(parse(&["--latency-ms"]).is_err());
        assert!(parse(&["--bogus"]).is_err());
    }
}
