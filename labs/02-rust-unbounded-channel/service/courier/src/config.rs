use std::time::Duration;

use crate::Error;

/// Default for [`Config::request_timeout`].
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Tuning knobs for a [`Client`](crate::Client), gathered in one place so
/// every default is written down once.
#[derive(Debug, Clone)]
pub struct Config {
    /// How long to wait for the TCP connect, and for the broker to answer
    /// one request, before treating the connection as lost. This is what
    /// turns a stalled broker into an error instead of a hang.
    pub request_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        }
    }
}

impl Config {
    /// Returns the config with `request_timeout` replaced.
    pub fn with_request_timeout(mut self, request_timeout: Duration) -> Config {
        self.request_timeout = request_timeout;
        self
    }

    /// Checks the values before any thread or socket is created.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        if self.request_timeout.is_zero() {
            return Err(Error::InvalidConfig(
                "request_timeout must be above zero".into(),
            ));
        }
        Ok(())
    }
}
