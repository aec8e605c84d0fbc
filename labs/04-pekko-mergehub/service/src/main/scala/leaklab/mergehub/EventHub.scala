package leaklab.mergehub

import scala.concurrent.Future

import org.apache.pekko.NotUsed
import org.apache.pekko.stream.Materializer
import org.apache.pekko.stream.scaladsl.{BroadcastHub, Keep, MergeHub, Sink, Source}

/** What became of one published location. */
enum Published:
  case Accepted, Dropped

/** One event's live feed: many publishers in, many WebSocket subscribers out.
  *
  * This is the "dynamic publish-subscribe" combination from Pekko's stream-dynamic
  * documentation: a MergeHub (any number of producers) feeding a BroadcastHub (any
  * number of consumers), materialised once when the event is opened.
  */
final class EventHub(bufferSize: Int)(using mat: Materializer):

  private val (sink: Sink[Location, NotUsed], source: Source[Location, NotUsed]) =
    MergeHub
      .source[Location](perProducerBufferSize = 16)
      .toMat(BroadcastHub.sink[Location](bufferSize = bufferSize))(Keep.both)
      .run()

  /** Hands one location to the event's stream. */
  def publish(location: Location): Future[Published] =
    Source.single(location).runWith(sink)
    Future.successful(Published.Accepted)

  /** A fresh feed of this event's locations from now on, for one subscriber. */
  def subscribe: Source[Location, NotUsed] = source
