//! The recorded matches a replay reads from: the same events, and the same lines, as
//! the ZIO service (`../service`, `MatchLog.scala`).
//!
//! The case study replayed matches of 720 players x 256 events. On a 2-core lab
//! machine a match is scaled down ten times: 72 players x 256 events = 18,432 events.
//! Events are not stored; each is a pure function of (match, seq).

use std::io::Write;

/// What happened at one tick to one player, stored inline in each event: no pointer, no
/// box (the rewrite's answer to an `Either[Nothing, Event]` per element). A fieldless
/// enum of eight variants is one byte without `#[repr(u8)]` too (today's compiler picks
/// the smallest integer that holds the discriminants); the attribute guarantees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Move = 0,
    Move2 = 1,
    Move3 = 2,
    Look = 3,
    Shot = 4,
    Hit = 5,
    Pickup = 6,
    Death = 7,
}

impl Kind {
    const ALL: [Kind; 8] = [
        Kind::Move,
        Kind::Move2,
        Kind::Move3,
        Kind::Look,
        Kind::Shot,
        Kind::Hit,
        Kind::Pickup,
        Kind::Death,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Kind::Move | Kind::Move2 | Kind::Move3 => "move",
            Kind::Look => "look",
            Kind::Shot => "shot",
            Kind::Hit => "hit",
            Kind::Pickup => "pickup",
            Kind::Death => "death",
        }
    }
}

/// One event, 20 bytes, `Copy`: it crosses the channel by value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub match_id: u32,
    pub seq: u32,
    pub tick: u32,
    pub player: u16,
    pub x: u16,
    pub y: u16,
    pub kind: Kind,
}

impl Event {
    /// Appends the event's line (newline-delimited JSON) to `out`.
    pub fn write_line(&self, out: &mut Vec<u8>) {
        // Writing to a Vec cannot fail.
        let _ = writeln!(
            out,
            "{{\"match\":{},\"seq\":{},\"tick\":{},\"player\":{},\"kind\":\"{}\",\"x\":{},\"y\":{}}}",
            self.match_id,
            self.seq,
            self.tick,
            self.player,
            self.kind.label(),
            self.x,
            self.y
        );
    }
}

/// Dimensions of the match log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatchLog {
    pub matches: u32,
    pub players: u32,
    pub events_per_player: u32,
}

impl Default for MatchLog {
    fn default() -> Self {
        MatchLog {
            matches: 64,
            players: 72,
            events_per_player: 256,
        }
    }
}

impl MatchLog {
    pub fn events_per_match(&self) -> u32 {
        self.players * self.events_per_player
    }

    /// Event `seq` of match `match_id`; the caller checks the ranges.
    pub fn event(&self, match_id: u32, seq: u32) -> Event {
        let h = mix((u64::from(match_id) << 32) | u64::from(seq));
        Event {
            match_id,
            seq,
            tick: seq / self.players,
            player: (seq % self.players) as u16,
            x: ((h >> 16) & 0xfff) as u16,
            y: ((h >> 28) & 0xfff) as u16,
            kind: Kind::ALL[(h & 7) as usize],
        }
    }
}

/// SplitMix64's finaliser, as in the ZIO service.
pub fn mix(v: u64) -> u64 {
    let mut z = v.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(log: &MatchLog, m: u32, s: u32) -> String {
        let mut out = Vec::new();
        log.event(m, s).write_line(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn lines_match_the_zio_service() {
        // The same golden lines are checked in the ZIO service's MatchLogSpec.
        let log = MatchLog::default();
        assert_eq!(
            line(&log, 5, 1234),
            "{\"match\":5,\"seq\":1234,\"tick\":17,\"player\":10,\"kind\":\"shot\",\"x\":3287,\"y\":1113}\n"
        );
        assert_eq!(
            line(&log, 0, 0),
            "{\"match\":0,\"seq\":0,\"tick\":0,\"player\":0,\"kind\":\"death\",\"x\":2845,\"y\":919}\n"
        );
        assert_eq!(
            line(&log, 63, 18431),
            "{\"match\":63,\"seq\":18431,\"tick\":255,\"player\":71,\"kind\":\"death\",\"x\":1307,\"y\":3401}\n"
        );
    }

    #[test]
    fn events_are_small_and_copy() {
        assert_eq!(std::mem::size_of::<Kind>(), 1);
        assert!(std::mem::size_of::<Event>() <= 20);
    }
}
