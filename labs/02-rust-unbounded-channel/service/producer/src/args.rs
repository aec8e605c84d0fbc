use std::time::Duration;

/// Shown with every usage error.
pub const USAGE: &str = "usage: producer --broker 127.0.0.1:PORT \
[--mode burst --messages N | --mode steady --rate R --duration-s S] [--size BYTES] \
[--linger-s S] [--trim]";

pub const MAX_MESSAGES: u64 = 1_000_000;
pub const MAX_RATE: u64 = 100_000;
pub const MAX_DURATION_S: u64 = 600;
pub const MAX_SIZE: u64 = 1024 * 1024;
pub const MAX_LINGER_S: u64 = 60;

/// How the messages are pushed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// `messages` sends, back to back, as fast as `send` returns.
    Burst { messages: u64 },
    /// `rate` sends per second for `duration`.
    Steady { rate: u64, duration: Duration },
}

/// The parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    pub broker: String,
    pub mode: Mode,
    /// Bytes per message.
    pub size: usize,
    /// How long to stay alive, idle, once everything is delivered, so RSS
    /// after the drain can be sampled (an exited process has no RSS).
    pub linger: Duration,
    /// Ask the allocator to return free memory to the kernel after the drain.
    pub trim: bool,
}

/// Parses the flags (without the program name). Errors are one line.
pub fn parse<I>(args: I) -> Result<Args, String>
where
    I: IntoIterator<Item = String>,
{
    let mut broker = None;
    let mut mode = "burst".to_owned();
    let mut messages = None;
    let mut rate = None;
    let mut duration_s = None;
    let mut size = 1024;
    let mut linger_s = 0;
    let mut trim = false;

    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--broker" => broker = Some(value()?),
            "--mode" => mode = value()?,
            "--messages" => messages = Some(number(&flag, &value()?, 1, MAX_MESSAGES)?),
            "--rate" => rate = Some(number(&flag, &value()?, 1, MAX_RATE)?),
            "--duration-s" => duration_s = Some(number(&flag, &value()?, 1, MAX_DURATION_S)?),
            "--size" => size = number(&flag, &value()?, 1, MAX_SIZE)? as usize,
            "--linger-s" => linger_s = number(&flag, &value()?, 0, MAX_LINGER_S)?,
            "--trim" => trim = true,
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown flag {other}")),
        }
    }

    let broker = broker.ok_or("--broker 127.0.0.1:PORT is required")?;
    let mode = match mode.as_str() {
        "burst" => {
            if rate.is_some() || duration_s.is_some() {
                return Err("--rate and --duration-s only apply to --mode steady".into());
            }
            Mode::Burst {
                messages: messages.unwrap_or(1000),
            }
        }
        "steady" => {
            if messages.is_some() {
                return Err("--messages only applies to --mode burst".into());
            }
            Mode::Steady {
                rate: rate.unwrap_or(1000),
                duration: Duration::from_secs(duration_s.unwrap_or(10)),
            }
        }
        other => return Err(format!("--mode wants burst or steady, got {other:?}")),
    };
    Ok(Args {
        broker,
        mode,
        size,
        linger: Duration::from_secs(linger_s),
        trim,
    })
}

fn number(flag: &str, text: &str, min: u64, max: u64) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "{flag} wants a whole number in {min}..={max}, got {text:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_strs(args: &[&str]) -> Result<Args, String> {
        parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn burst_defaults() {
        let args = parse_strs(&["--broker", "127.0.0.1:1"]).unwrap();
        assert_eq!(args.mode, Mode::Burst { messages: 1000 });
        assert_eq!(args.size, 1024);
        assert_eq!(args.linger, Duration::ZERO);
        assert!(!args.trim);
    }

    #[test]
    fn after_the_drain() {
        let args = parse_strs(&["--broker", "127.0.0.1:1", "--linger-s", "15", "--trim"]).unwrap();
        assert_eq!(args.linger, Duration::from_secs(15));
        assert!(args.trim);
    }

    #[test]
    fn steady() {
        let args = parse_strs(&[
            "--broker",
            "127.0.0.1:1",
            "--mode",
            "steady",
            "--rate",
            "500",
            "--duration-s",
            "3",
        ])
        .unwrap();
        assert_eq!(
            args.mode,
            Mode::Steady {
                rate: 500,
                duration: Duration::from_secs(3)
            }
        );
    }

    #[test]
    fn caps_and_mistakes_are_refused() {
        let base = ["--broker", "127.0.0.1:1"];
        let bad: &[&[&str]] = &[
            &["--messages", "1000001"],
            &["--messages", "0"],
            &["--mode", "steady", "--rate", "100001"],
            &["--mode", "steady", "--duration-s", "601"],
            &["--mode", "steady", "--messages", "5"],
            &["--rate", "5"],
            &["--mode", "sideways"],
            &["--size"],
            &["--linger-s", "61"],
            &["--frobnicate"],
        ];
        for extra in bad {
            let args: Vec<&str> = base.iter().chain(extra.iter()).copied().collect();
            assert!(parse_strs(&args).is_err(), "accepted {args:?}");
        }
        assert!(
            parse_strs(&["--messages", "5"]).is_err(),
            "--broker is required"
        );
    }
}
