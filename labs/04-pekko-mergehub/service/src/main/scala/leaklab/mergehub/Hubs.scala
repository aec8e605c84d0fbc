package leaklab.mergehub

import java.util.concurrent.atomic.AtomicLong

import scala.concurrent.{ExecutionContext, Future}

import org.apache.pekko.NotUsed
import org.apache.pekko.stream.Materializer
import org.apache.pekko.stream.scaladsl.Source

/** The events this service knows about, each with its own hub, and the counters the
  * metrics endpoint reports. Events are fixed at start-up, so the map never changes and
  * an unknown event is a client error, not a new hub.
  */
final class Hubs(events: Seq[String], bufferSize: Int)(using Materializer, ExecutionContext):

  private val hubs: Map[String, EventHub] = events.map(e => e -> EventHub(bufferSize)).toMap
  private val accepted = AtomicLong()
  private val dropped = AtomicLong()

  def known(event: String): Boolean = hubs.contains(event)

  /** None when the event is unknown. */
  def publish(event: String, location: Location): Option[Future[Published]] =
    hubs.get(event).map(_.publish(location).map(count))

  /** None when the event is unknown. */
  def subscribe(event: String): Option[Source[Location, NotUsed]] =
    hubs.get(event).map(_.subscribe)

  def acceptedCount: Long = accepted.get
  def droppedCount: Long = dropped.get

  private def count(result: Published): Published =
    result match
      case Published.Accepted => accepted.incrementAndGet()
      case Published.Dropped => dropped.incrementAndGet()
    result
