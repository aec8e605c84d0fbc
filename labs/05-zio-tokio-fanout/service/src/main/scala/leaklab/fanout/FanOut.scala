package leaklab.fanout

import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong

import zio.*
import zio.stream.*

/** End of a replay, sent down the queue after the producer's last event. */
case object ReplayEnd

/** One replay request's subscription: the queue its producer fiber fills.
  *
  * Kept in FanOut's table so the service can tell how many replays are open
  * (`open_subscriptions` in /metrics) and, in principle, shut them down.
  */
final case class Subscription(id: Long, matchId: Int, queue: Queue[Either[ReplayEnd.type, Event]])

/** Fans a match's events out to the replay requests that ask for them.
  *
  * This is the part of the service a learner fixes. It is our own broken code, written
  * in the spirit of the case study, not a copy of its sample (which the post does not
  * show). One inversion, on purpose: the post blames a default chunk size of 4k left
  * untouched; here chunks are of ONE element, the other end of the same dial, because
  * that is where ZIO's per-element cost shows at lab scale (the README's reproduction
  * table says so too). What it does:
  *
  *  - each request gets an UNBOUNDED queue and a producer fiber, forked as a daemon, that
  *    replays the requested page plus `readAhead` events "for the next page" as fast as it
  *    can, whether or not the client keeps up: the queue holds everything it ran ahead by;
  *  - every event crosses the queue boxed (`Right(event)`, `Left(ReplayEnd)` at the end)
  *    and is unboxed again on the other side, one element at a time;
  *  - downstream, the stream is cut into one-element chunks (`rechunk(1)`) and every line
  *    becomes its own tiny stream (`flatMap(ZStream.fromChunk)`), so each event costs a
  *    handful of short-lived objects on top of the event itself;
  *  - a subscription leaves the table only when its consumer reads `ReplayEnd`. The
  *    consumer stops after `count` events, before the read-ahead and the marker, so no
  *    subscription ever leaves: each request leaves its queue (with `readAhead` boxed
  *    events still in it) reachable from the table for the life of the process.
  */
final class FanOut(log: MatchLog, readAhead: Int, metrics: Metrics):
  private val nextId = AtomicLong(0L)
  private val open = ConcurrentHashMap[Long, Subscription]()

  def openSubscriptions: Long = open.size.toLong

  /** The body of `GET /replay`: `count` events of `matchId` from `from`, one JSON line each.
    * The caller has checked the ranges.
    */
  def replay(matchId: Int, from: Int, count: Int): ZStream[Any, Nothing, Byte] =
    ZStream.unwrap {
      for
        queue <- Queue.unbounded[Either[ReplayEnd.type, Event]]
        sub = Subscription(nextId.incrementAndGet(), matchId, queue)
        _ <- ZIO.succeed(open.put(sub.id, sub))
        until = math.min(from.toLong + count + readAhead, log.eventsPerMatch.toLong).toInt
        _ <- produce(queue, matchId, from, until).forkDaemon
      yield consume(sub, count)
    }

  /** Runs ahead of the consumer: offers every event from `from` to `until`, then the end marker. */
  private def produce(queue: Queue[Either[ReplayEnd.type, Event]], matchId: Int, from: Int, until: Int): UIO[Unit] =
    ZIO.foreachDiscard(from until until)(seq => queue.offer(Right(log.event(matchId, seq)))) *>
      queue.offer(Left(ReplayEnd)).unit

  /** Takes the client's `count` events off the queue, one boxed element at a time. */
  private def consume(sub: Subscription, count: Int): ZStream[Any, Nothing, Byte] =
    ZStream
      .fromQueue(sub.queue, maxChunkSize = 1)
      .mapZIO {
        case Right(event) => ZIO.some(event)
        case Left(ReplayEnd) => ZIO.succeed(open.remove(sub.id)).as(None)
      }
      .collectWhileSome
      .take(count.toLong)
      .rechunk(1)
      .map { event =>
        metrics.eventsStreamed.increment()
        event.line
      }
      .flatMap(line => ZStream.fromChunk(Chunk.fromArray(line.getBytes(UTF_8))))
