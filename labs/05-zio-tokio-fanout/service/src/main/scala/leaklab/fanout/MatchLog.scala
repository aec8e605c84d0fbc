package leaklab.fanout

/** The recorded matches a replay reads from.
  *
  * The case study's service replayed matches of 720 players, 256 events each. On a
  * 2-core lab machine the match is scaled down ten times: 72 players x 256 events =
  * 18,432 events per match by default. Events are not stored: each one is a pure
  * function of (match, seq), so a replay costs CPU and allocation, never a database,
  * and the Tokio service in ../tokio computes exactly the same events and lines.
  */
final case class MatchLog(matches: Int, players: Int, eventsPerPlayer: Int):
  require(matches > 0 && players > 0 && eventsPerPlayer > 0, "match log dimensions must be positive")

  /** Events in one match: every player's events, interleaved tick by tick. */
  val eventsPerMatch: Int = players * eventsPerPlayer

  /** Event `seq` of match `matchId`; the caller checks the ranges. */
  def event(matchId: Int, seq: Int): Event =
    val h = MatchLog.mix((matchId.toLong << 32) | (seq.toLong & 0xffffffffL))
    Event(
      matchId = matchId,
      seq = seq,
      tick = seq / players,
      player = seq % players,
      kind = Kind.fromOrdinal((h & 7L).toInt),
      x = ((h >>> 16) & 0xfffL).toInt,
      y = ((h >>> 28) & 0xfffL).toInt
    )

object MatchLog:
  val default: MatchLog = MatchLog(matches = 64, players = 72, eventsPerPlayer = 256)

  /** SplitMix64's finaliser: a cheap, well-spread, portable hash (the Rust side uses the same). */
  def mix(v: Long): Long =
    var z = v + 0x9e3779b97f4a7c15L
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL
    z ^ (z >>> 31)

/** What happened at one tick to one player. Eight kinds, weighted towards movement. */
enum Kind(val label: String):
  case Move extends Kind("move")
  case Move2 extends Kind("move")
  case Move3 extends Kind("move")
  case Look extends Kind("look")
  case Shot extends Kind("shot")
  case Hit extends Kind("hit")
  case Pickup extends Kind("pickup")
  case Death extends Kind("death")

final case class Event(matchId: Int, seq: Int, tick: Int, player: Int, kind: Kind, x: Int, y: Int):
  /** One line of the replay body: newline-delimited JSON, identical in both services. */
  def line: String =
    s"""{"match":$matchId,"seq":$seq,"tick":$tick,"player":$player,"kind":"${kind.label}","x":$x,"y":$y}""" + "\n"
