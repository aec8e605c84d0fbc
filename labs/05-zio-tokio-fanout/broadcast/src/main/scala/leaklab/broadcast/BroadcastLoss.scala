package leaklab.broadcast

import zio.*

/** One match's live events fanned out through a ZIO `Hub` to several subscribers, one of
  * which reads slower than the publisher writes; counts what each subscriber received and
  * what it lost, once per hub strategy (the reference page "Hub" of the ZIO docs):
  *
  *  - `Hub.bounded` (back pressure): a message stays until every subscriber has taken
  *    it; a full hub makes the publisher wait, so nobody loses anything and everybody,
  *    the publisher and the fast subscribers, goes at the slowest subscriber's pace;
  *  - `Hub.sliding`: a full hub takes the new message and drops the oldest, so the
  *    subscriber that had not taken it yet (the slow one) loses it, and is not told;
  *  - `Hub.dropping`: a full hub drops the NEW message (`publish` answers false), so
  *    every subscriber loses it, the fast ones included;
  *  - `sliding-resync`: a sliding hub, and subscribers allowed to read the match log the
  *    publisher appends each event to before publishing it. On a jump in the sequence
  *    numbers (or the end marker with events missing) a subscriber reads the log from the
  *    first sequence number it lacks up to the log's end, then goes back to the hub and
  *    drops every value it already has. The hub then decides how often a subscriber takes
  *    the slow path, not what it receives.
  *
  * Not part of the replay service: the lab's "losing events" measurement (README, "Fan-out:
  * who loses events"), beside its Tokio counterpart (`tokio/examples/broadcast_loss.rs`).
  * Prints one JSON line per strategy. Flags as the Tokio program's: --subscribers 8
  * --events 20000 --rate 10000 --slow-rate 2000 --capacity 1024.
  */
object BroadcastLoss extends ZIOAppDefault:

  final case class Settings(subscribers: Int, events: Int, rate: Double, slowRate: Double, capacity: Int)

  /** What one subscriber saw: events handed on (in order, each once), and sequence numbers
    * skipped between two values taken from the hub. With resync, also: reads from the log,
    * events handed on from it, hub values dropped as already handed on, the most events one
    * read had to fetch (how far back the log must reach), and when it had read everything.
    */
  final case class Tally(
      id: Int,
      slow: Boolean,
      received: Int = 0,
      gaps: Int = 0,
      resyncs: Int = 0,
      recovered: Int = 0,
      duplicates: Int = 0,
      maxBehind: Int = 0,
      doneS: Double = 0.0
  )

  private val Strategies = List("bounded", "sliding", "dropping", "sliding-resync")

  /** Published after the last event; a subscriber stops when it takes it. */
  private val End = -1

  def parse(args: List[String]): Either[String, Settings] =
    def loop(rest: List[String], s: Settings): Either[String, Settings] = rest match
      case Nil => Right(s)
      case flag :: value :: tail =>
        value.toIntOption.filter(_ >= 1).toRight(s"$flag $value: must be a positive whole number").flatMap { n =>
          flag match
            case "--subscribers" if n <= 64 => loop(tail, s.copy(subscribers = n))
            case "--events" if n <= 10_000_000 => loop(tail, s.copy(events = n))
            case "--rate" if n <= 10_000_000 => loop(tail, s.copy(rate = n.toDouble))
            case "--slow-rate" if n <= 10_000_000 => loop(tail, s.copy(slowRate = n.toDouble))
            case "--capacity" if n <= (1 << 20) => loop(tail, s.copy(capacity = n))
            case _ => Left(s"$flag $value: unknown flag or out of range")
        }
      case flag :: Nil => Left(s"$flag: missing value")
    loop(args, Settings(subscribers = 8, events = 20_000, rate = 10_000.0, slowRate = 2_000.0, capacity = 1024))

  override def run: ZIO[ZIOAppArgs, Any, Any] =
    getArgs.flatMap { args =>
      parse(args.toList) match
        case Left(problem) => Console.printLineError(s"broadcast-loss: $problem").orDie *> exit(ExitCode(2))
        case Right(s) =>
          ZIO.foreachDiscard(Strategies)(strategy =>
            measure(s, strategy).flatMap(Console.printLine(_))
          )
    }

  private def hub(strategy: String, capacity: Int): UIO[Hub[Int]] = strategy match
    case "bounded" => Hub.bounded[Int](capacity)
    case "sliding" | "sliding-resync" => Hub.sliding[Int](capacity)
    case _ => Hub.dropping[Int](capacity)

  /** One hub, its subscribers (subscribed in the scope before the first publish), the
    * paced publisher, then the end marker; the line of JSON with every subscriber's tally.
    */
  def measure(s: Settings, strategy: String): UIO[String] =
    runOnce(s, strategy).map((publishS, doneS, tallies) => json(s, strategy, publishS, doneS, tallies))

  /** One run: seconds until the last event was published, until every subscriber had
    * ended, and every subscriber's tally (subscriber 0 is the slow one).
    */
  def runOnce(s: Settings, strategy: String): UIO[(Double, Double, Seq[Tally])] =
    ZIO.scoped {
      for
        hub <- hub(strategy, s.capacity)
        log <- Ref.make(Vector.empty[Int])
        queues <- ZIO.foreach(0 until s.subscribers)(_ => hub.subscribe)
        start <- Clock.nanoTime
        readers <- ZIO.foreach(queues.zipWithIndex) { (q, i) =>
          val pace = if i == 0 then Some(s.slowRate) else None
          val reader =
            if strategy.endsWith("-resync") then consumeResync(q, log, s.events, i, pace, start)
            else consume(q, i, pace, start)
          reader.fork
        }
        _ <- publish(hub, log, s, start, 0)
        published <- Clock.nanoTime
        _ <- publishEnd(hub)
        tallies <- ZIO.foreach(readers)(_.join)
        done <- Clock.nanoTime
      yield ((published - start) / 1e9, (done - start) / 1e9, tallies)
    }

  /** Publishes events 0 until `s.events` at `s.rate` per second, in the batches due each
    * millisecond, each batch appended to the match log before it is published (so whatever
    * a subscriber takes from the hub is already in the log); a bounded hub makes
    * `publishAll` wait while it is full.
    */
  private def publish(hub: Hub[Int], log: Ref[Vector[Int]], s: Settings, start: Long, sent: Int): UIO[Unit] =
    if sent >= s.events then ZIO.unit
    else
      Clock.nanoTime.flatMap { now =>
        val due = math.min(s.events.toLong, ((now - start) / 1e9 * s.rate).toLong).toInt
        if due > sent then
          log.update(_ ++ (sent until due)) *> hub.publishAll(sent until due) *> publish(hub, log, s, start, due)
        else ZIO.sleep(1.milli) *> publish(hub, log, s, start, sent)
      }

  /** A dropping hub refuses the end marker while it is full: try again until it is taken. */
  private def publishEnd(hub: Hub[Int]): UIO[Unit] =
    hub.publish(End).flatMap(taken => if taken then ZIO.unit else ZIO.sleep(1.milli) *> publishEnd(hub))

  /** With `pace`, waits until `received` events are no more than that many per second
    * since `start` (a subscriber doing slow work per event).
    */
  private def keepTo(pace: Option[Double], received: Int, start: Long): UIO[Unit] =
    pace.fold(ZIO.unit) { rate =>
      Clock.nanoTime.flatMap { now =>
        if received > (now - start) / 1e9 * rate then ZIO.sleep(1.milli) *> keepTo(pace, received, start)
        else ZIO.unit
      }
    }

  private def finished(t: Tally, start: Long): UIO[Tally] =
    Clock.nanoTime.map(now => t.copy(doneS = (now - start) / 1e9))

  /** Takes values until the end marker, counting what it skipped. */
  private def consume(q: Dequeue[Int], id: Int, pace: Option[Double], start: Long): UIO[Tally] =
    def loop(received: Int, next: Int, gaps: Int): UIO[Tally] =
      q.take.flatMap { seq =>
        if seq == End then finished(Tally(id, pace.isDefined, received, gaps), start)
        else keepTo(pace, received + 1, start) *> loop(received + 1, seq + 1, gaps + seq - next)
      }
    loop(0, 0, 0)

  /** Takes values until the end marker; on a loss (a jump in the sequence numbers, or the
    * end with events missing) reads the log from `next`, the first event it lacks, to the
    * log's end, and hands each on; a value below `next` is one it has: dropped.
    */
  private def consumeResync(
      q: Dequeue[Int],
      log: Ref[Vector[Int]],
      events: Int,
      id: Int,
      pace: Option[Double],
      start: Long
  ): UIO[Tally] =
    def deliver(t: Tally): UIO[Tally] =
      keepTo(pace, t.received + 1, start).as(t.copy(received = t.received + 1))
    def resync(t: Tally, next: Int): UIO[(Tally, Int)] =
      log.get.flatMap { stored =>
        val missing = stored.drop(next) // entry i is event i
        val reading = t.copy(resyncs = t.resyncs + 1, maxBehind = math.max(t.maxBehind, missing.size))
        ZIO
          .foldLeft(missing)(reading)((acc, _) => deliver(acc).map(d => d.copy(recovered = d.recovered + 1)))
          .map(_ -> (next + missing.size))
      }
    def loop(t: Tally, next: Int): UIO[Tally] =
      q.take.flatMap { seq =>
        if seq == End then
          (if next < events then resync(t, next).map(_._1) else ZIO.succeed(t)).flatMap(finished(_, start))
        else if seq < next then loop(t.copy(duplicates = t.duplicates + 1), next)
        else if seq == next then deliver(t).flatMap(loop(_, next + 1))
        else resync(t.copy(gaps = t.gaps + seq - next), next).flatMap(loop.tupled) // the log holds seq too
      }
    loop(Tally(id, pace.isDefined), 0)

  private def json(s: Settings, strategy: String, publishS: Double, doneS: Double, tallies: Seq[Tally]): String =
    val rows = tallies.map { t =>
      val resync =
        if strategy.endsWith("-resync") then
          f""","resyncs":${t.resyncs},"recovered":${t.recovered},"duplicates":${t.duplicates},""" +
            f""""max_behind":${t.maxBehind},"done_s":${t.doneS}%.3f"""
        else ""
      s"""{"id":${t.id},"slow":${t.slow},"received":${t.received},"lost":${s.events - t.received},"gaps":${t.gaps}$resync}"""
    }
    f"""{"runtime":"zio","strategy":"$strategy","capacity":${s.capacity},"events":${s.events},""" +
      f""""rate":${s.rate}%.0f,"slow_rate":${s.slowRate}%.0f,"publish_s":$publishS%.3f,"done_s":$doneS%.3f,""" +
      s""""subscribers":[${rows.mkString(",")}]}"""
