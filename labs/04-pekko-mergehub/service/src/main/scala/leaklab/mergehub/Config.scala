package leaklab.mergehub

/** Start-up settings, from flags first and the environment second.
  *
  * The service only ever binds the loopback interface: it is a lab exercise, not
  * something to expose.
  */
final case class Config(
    port: Int = 8080,
    events: Seq[String] = Seq("race-1", "race-2", "race-3"),
    bufferSize: Int = 128,
    maxBodyBytes: Long = 4096
):
  val host = "127.0.0.1"

object Config:
  /** The largest buffer BroadcastHub accepts: a power of two, and less than 4096. */
  val MaxBufferSize = 2048

  val usage =
    "usage: location-service [--port N] [--events a,b,c] [--buffer-size N] [--max-body-bytes N] (env: PORT)"

  def parse(args: List[String], env: Map[String, String]): Either[String, Config] =
    val fromEnv = env.get("PORT").flatMap(_.toIntOption).fold(Config())(p => Config(port = p))
    flags(args, fromEnv).flatMap(check)

  private def flags(args: List[String], c: Config): Either[String, Config] =
    args match
      case Nil => Right(c)
      case "--port" :: v :: rest => int(v).flatMap(p => flags(rest, c.copy(port = p)))
      case "--events" :: v :: rest => flags(rest, c.copy(events = v.split(',').map(_.trim).filter(_.nonEmpty).toSeq))
      case "--buffer-size" :: v :: rest => int(v).flatMap(b => flags(rest, c.copy(bufferSize = b)))
      case "--max-body-bytes" :: v :: rest => int(v).flatMap(b => flags(rest, c.copy(maxBodyBytes = b.toLong)))
      case other :: _ => Left(s"unknown argument $other\n$usage")

  private def int(v: String): Either[String, Int] = v.toIntOption.toRight(s"not a number: $v\n$usage")

  private def check(c: Config): Either[String, Config] =
    if c.port < 0 || c.port > 65535 then Left(s"port ${c.port} is out of range")
    else if c.events.isEmpty then Left("give at least one event")
    // BroadcastHub.sink requires a power of two below 4096 (and throws at start-up
    // otherwise); MergeHub accepts any positive size.
    else if c.bufferSize < 1 || c.bufferSize > MaxBufferSize || Integer.bitCount(c.bufferSize) != 1 then
      Left(s"buffer size ${c.bufferSize} must be a power of two from 1 to $MaxBufferSize (BroadcastHub's limit)")
    else if c.maxBodyBytes < 64 then Left("max body must be at least 64 bytes")
    else Right(c)
