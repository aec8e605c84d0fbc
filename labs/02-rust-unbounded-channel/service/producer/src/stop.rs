//! Stopping early. The harness sends SIGTERM once a run's verdict is decided
//! (an adaptive run needs no more data), and a learner presses Ctrl-C: either
//! ends the sending at the next message. What the client still holds is then
//! given `STOP_GRACE` to drain before the program reports and exits; a
//! second signal exits at once.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use signal_hook::consts::{SIGINT, SIGTERM};

/// How long a stopped program waits for what the client still holds to be
/// acknowledged. A stopped run has to end promptly, whatever the client
/// holds: what is left after this is reported as not delivered, not waited for.
pub const STOP_GRACE: Duration = Duration::from_secs(1);

/// Set by the first SIGTERM or SIGINT.
#[derive(Clone, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    /// Installs the handlers. Registration order matters: the conditional
    /// shutdown is checked before the flag is set, so only a second signal
    /// exits (with status 1).
    pub fn install() -> io::Result<StopFlag> {
        let flag = StopFlag::default();
        for signal in [SIGTERM, SIGINT] {
            signal_hook::flag::register_conditional_shutdown(signal, 1, Arc::clone(&flag.0))?;
            signal_hook::flag::register(signal, Arc::clone(&flag.0))?;
        }
        Ok(flag)
    }

    pub fn raised(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}
