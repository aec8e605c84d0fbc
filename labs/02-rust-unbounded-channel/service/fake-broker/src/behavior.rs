use std::time::Duration;

/// What the broker does with each request: how long it takes and whether
/// it fails. Kept apart from the socket code so the rules are easy to read.
///
/// Counters for `fail_every` and `disconnect_after` are per connection, so a
/// test's outcome does not depend on what other clients did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Behavior {
    /// Charged once per request, whatever its size.
    pub latency: Duration,
    /// Charged per message on top of `latency`.
    pub per_message: Duration,
    /// Answer every Nth request with an error response instead of an ack.
    pub fail_every: Option<u64>,
    /// Close the connection, without answering, when request N+1 arrives.
    pub disconnect_after: Option<u64>,
}

/// What to do with one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    Ack,
    Fail(String),
    Disconnect,
}

impl Behavior {
    /// Time to charge for a request carrying `messages` messages.
    pub(crate) fn cost(&self, messages: usize) -> Duration {
        let messages = u32::try_from(messages).unwrap_or(u32::MAX);
        self.latency + self.per_message.saturating_mul(messages)
    }

    /// Decides the fate of the `number`th request (1-based) on a connection.
    pub(crate) fn verdict(&self, number: u64) -> Verdict {
        if self.disconnect_after.is_some_and(|limit| number > limit) {
            return Verdict::Disconnect;
        }
        if self
            .fail_every
            .is_some_and(|every| number.is_multiple_of(every))
        {
            return Verdict::Fail(format!("injected failure on request {number}"));
        }
        Verdict::Ack
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_and_single_cost_the_same_without_per_message_cost() {
        let behavior = Behavior {
            latency: Duration::from_millis(1),
            ..Behavior::default()
        };
        assert_eq!(behavior.cost(1), behavior.cost(64));
    }

    #[test]
    fn fails_every_nth_and_disconnects_after_limit() {
        let behavior = Behavior {
            fail_every: Some(2),
            disconnect_after: Some(3),
            ..Behavior::default()
        };
        assert_eq!(behavior.verdict(1), Verdict::Ack);
        assert!(matches!(behavior.verdict(2), Verdict::Fail(_)));
        assert_eq!(behavior.verdict(3), Verdict::Ack);
        assert_eq!(behavior.verdict(4), Verdict::Disconnect);
    }
}
