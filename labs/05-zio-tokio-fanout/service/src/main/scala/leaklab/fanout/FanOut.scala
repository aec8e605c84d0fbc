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
  * (`open_subscriptions` in /metrics).
  */
final case class Subscription(id: Long, matchId: Int, queue: Queue[Either[ReplayEnd.type, Event]])

/** Fans a match's events out to the replay requests that ask for them.
  *
  * Each request opens a subscription, counted by `openSubscriptions` (`open_subscriptions`
  * in /metrics), and is answered with a response stream: the client's `count` events of
  * the match from `from`, each rendered as one JSON line.
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

  /** Offers every event from `from` to `until`, then the end marker. */
  private def produce(queue: Queue[Either[ReplayEnd.type, Event]], matchId: Int, from: Int, until: Int): UIO[Unit] =
    ZIO.foreachDiscard(from until until)(seq => queue.offer(Right(log.event(matchId, seq)))) *>
      queue.offer(Left(ReplayEnd)).unit

  /** Takes the client's `count` events off the queue and renders each as a JSON line. */
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
