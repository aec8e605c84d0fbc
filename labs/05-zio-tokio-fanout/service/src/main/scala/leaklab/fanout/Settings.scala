package leaklab.fanout

/** Command line: `--port N` (required) plus optional match dimensions. Binds loopback only.
  *
  * `--read-ahead` is how many events of the next page a replay prepares beside the page
  * it serves (see FanOut). `--max-count` caps the events one request may ask for.
  */
final case class Settings(
    host: String,
    port: Int,
    log: MatchLog,
    maxCount: Int,
    readAhead: Int
)

object Settings:
  val usage: String =
    "usage: replay-service --port N [--matches 64] [--players 72] [--events-per-player 256] [--max-count 4096] [--read-ahead 512]"

  def parse(args: List[String]): Either[String, Settings] =
    def loop(rest: List[String], acc: Map[String, Int]): Either[String, Map[String, Int]] = rest match
      case Nil => Right(acc)
      case flag :: value :: tail if flag.startsWith("--") && known(flag) =>
        value.toIntOption match
          case Some(n) => loop(tail, acc.updated(flag, n))
          case None => Left(s"$flag $value: not a number\n$usage")
      case other :: _ => Left(s"unexpected argument $other\n$usage")

    for
      opts <- loop(args, Map.empty)
      port <- opts.get("--port").toRight(s"--port is required\n$usage")
      _ <- Either.cond(port > 0 && port < 65536, (), s"--port $port: out of range")
      matches = opts.getOrElse("--matches", MatchLog.default.matches)
      players = opts.getOrElse("--players", MatchLog.default.players)
      perPlayer = opts.getOrElse("--events-per-player", MatchLog.default.eventsPerPlayer)
      _ <- Either.cond(matches > 0 && matches <= 100000, (), s"--matches $matches: must be 1..100000")
      _ <- Either.cond(players > 0 && players <= 10000, (), s"--players $players: must be 1..10000")
      _ <- Either.cond(perPlayer > 0 && perPlayer <= 100000, (), s"--events-per-player $perPlayer: must be 1..100000")
      _ <- Either.cond(players.toLong * perPlayer <= Int.MaxValue / 2, (), "match too large")
      maxCount = opts.getOrElse("--max-count", 4096)
      readAhead = opts.getOrElse("--read-ahead", 512)
      _ <- Either.cond(maxCount > 0, (), s"--max-count $maxCount: must be positive")
      _ <- Either.cond(readAhead >= 0, (), s"--read-ahead $readAhead: must not be negative")
    yield Settings("127.0.0.1", port, MatchLog(matches, players, perPlayer), maxCount, readAhead)

  private val known = Set("--port", "--matches", "--players", "--events-per-player", "--max-count", "--read-ahead")
