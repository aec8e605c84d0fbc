package leaklab.mergehub

import java.nio.charset.{CharacterCodingException, StandardCharsets}

import scala.concurrent.{ExecutionContext, Future}
import scala.concurrent.duration.{DurationInt, FiniteDuration}
import scala.util.{Failure, Success, Try}

import org.apache.pekko.event.Logging
import org.apache.pekko.http.scaladsl.marshallers.sprayjson.SprayJsonSupport.*
import org.apache.pekko.http.scaladsl.model.{ContentTypes, HttpEntity, MediaTypes, StatusCode, StatusCodes}
import org.apache.pekko.http.scaladsl.model.ws.{BinaryMessage, Message, TextMessage}
import org.apache.pekko.http.scaladsl.server.{Directives, MalformedRequestContentRejection, RejectionError, Route}
import org.apache.pekko.http.scaladsl.unmarshalling.{FromEntityUnmarshaller, Unmarshaller}
import org.apache.pekko.stream.{Materializer, OverflowStrategy}
import org.apache.pekko.stream.scaladsl.{Flow, Sink, Source}
import org.apache.pekko.util.ByteString
import spray.json.*

/** The HTTP surface: publish, subscribe (WebSocket), health, metrics, diagnostics.
  *
  * Input is bounded and validated before it reaches a hub: a body over `maxBodyBytes`
  * is refused with 413, a body that is not UTF-8 or JSON that is not a location with
  * 400, an unknown event with 404. A subscriber's own messages are bounded the same
  * way: one over `maxBodyBytes`, or one still arriving after `messageTimeout`, ends its
  * connection.
  *
  * A publish the hub did not take is never reported as accepted: `Dropped` and a failed
  * publish both answer 503 with the reason. A viewer that reads slowly gets its own
  * small dropping buffer, so it loses its oldest positions instead of holding up the
  * event's hub for every other viewer.
  */
final class Routes(hubs: Hubs, maxBodyBytes: Long, messageTimeout: FiniteDuration = 10.seconds)(using
    mat: Materializer
) extends Directives:

  private val log = Logging(mat.system, classOf[Routes])

  val route: Route =
    concat(
      path("events" / Segment / "locations") { event =>
        post {
          knownEvent(event) {
            withSizeLimit(maxBodyBytes) {
              entity(as[Location]) { location => publish(event, location) }
            }
          }
        }
      },
      path("events" / Segment / "subscribe") { event =>
        get {
          knownEvent(event) {
            handleWebSocketMessages(feed(event))
          }
        }
      },
      path("healthz") {
        get(complete("ok"))
      },
      path("metrics") {
        get(complete(metricsJson))
      },
      path("debug" / "class-histogram") {
        get(complete(HttpEntity(ContentTypes.`text/plain(UTF-8)`, ClassHistogram.take())))
      }
    )

  /** A location from a JSON body. JSON text is UTF-8 (RFC 8259, section 8.1), but
    * spray-json's parser turns a malformed byte into U+FFFD and carries on, so a
    * skater name nobody sent would reach every subscriber. The bytes are decoded
    * strictly first: a body that is not UTF-8 is malformed, a 400.
    */
  private given FromEntityUnmarshaller[Location] =
    Unmarshaller.byteStringUnmarshaller
      .forContentTypes(MediaTypes.`application/json`)
      .map(bytes => JsonParser(strictUtf8(bytes)).convertTo[Location])

  private def strictUtf8(bytes: ByteString): String =
    // A new decoder reports malformed input (String's constructor would replace it).
    try StandardCharsets.UTF_8.newDecoder().decode(bytes.asByteBuffer).toString
    catch
      case e: CharacterCodingException =>
        throw RejectionError(MalformedRequestContentRejection("the body is not valid UTF-8", e))

  private def knownEvent(event: String)(inner: => Route): Route =
    if hubs.known(event) then inner
    else complete(StatusCodes.NotFound, JsObject("error" -> JsString(s"unknown event $event")))

  private def publish(event: String, location: Location): Route =
    Location.problems(location) match
      case Nil =>
        // knownEvent has checked the event, so the Option is always defined here.
        val result = hubs.publish(event, location).get
        onComplete(result)(outcome => complete(Routes.answer(outcome)))
      case problems =>
        complete(StatusCodes.BadRequest, JsObject("error" -> JsArray(problems.map(JsString(_)).toVector)))

  /** Server to client only: the event's locations as JSON text frames. Whatever the
    * client sends is read and discarded (a streamed frame must be drained, or the
    * connection stalls), and closing either side ends the other.
    *
    * pekko-http puts no limit on an incoming frame: a header announcing 2^62 bytes
    * starts a message that lasts as long as the client cares to trickle it. So each
    * message is read under a size and a time limit, and the first one past either
    * ends the drain, which ends the outgoing side too: pekko-http closes the
    * connection. Text that is not UTF-8 never gets here (pekko-http closes with 1007).
    */
  private def feed(event: String): Flow[Message, Message, Any] =
    val drain = Flow[Message]
      .mapAsync(1)(drained)
      .takeWhile { within =>
        if !within then
          log.warning("closing a subscriber of {}: a message over {} bytes or {}", event, maxBodyBytes, messageTimeout)
        within
      }
      .to(Sink.ignore)
    // A viewer whose socket stops reading must not hold up the event's other viewers:
    // this buffer always pulls and, when the viewer is a buffer behind, drops the
    // viewer's oldest position (for a live map the newest one matters).
    val out = hubs
      .subscribe(event)
      .get
      .buffer(Routes.ViewerBuffer, OverflowStrategy.dropHead)
      .map(l => TextMessage.Strict(l.toJson.compactPrint))
    Flow.fromSinkAndSourceCoupled(drain, out)

  /** Reads one client message to its end, or until it is over the size or the time
    * limit; true if it ended within both. The limits stop reading by completing the
    * stream (`takeWhile`, `takeWithin`), not by failing it (`limitWeighted`,
    * `completionTimeout`): a failure would travel up into pekko-http's WebSocket
    * stage, which logs it as an error of the service, with a stack trace.
    */
  private def drained(message: Message): Future[Boolean] =
    val sizes = message match
      case text: TextMessage => text.textStream.map(_.getBytes(StandardCharsets.UTF_8).length.toLong)
      case binary: BinaryMessage => binary.dataStream.map(_.size.toLong)
    sizes
      .map(Read(_, ended = false))
      .concat(Source.single(Read(0, ended = true)))
      .scan(Read(0, ended = false))((total, next) => Read(total.bytes + next.bytes, next.ended))
      .takeWhile(read => !read.ended && read.bytes <= maxBodyBytes, inclusive = true)
      .takeWithin(messageTimeout)
      .runWith(Sink.last)
      .map(read => read.ended && read.bytes <= maxBodyBytes)(using ExecutionContext.parasitic)

  private def metricsJson: JsObject =
    val jvm = JvmMetrics.snapshot()
    JsObject(
      "heap_used_bytes" -> JsNumber(jvm.heapUsedBytes),
      "heap_committed_bytes" -> JsNumber(jvm.heapCommittedBytes),
      "heap_max_bytes" -> JsNumber(jvm.heapMaxBytes),
      "heap_after_gc_bytes" -> JsNumber(jvm.heapAfterGcBytes),
      "pools_collection_usage_bytes" -> JsNumber(jvm.poolsCollectionUsageBytes),
      "gc_count" -> JsNumber(jvm.gcCount),
      "gc_time_ms" -> JsNumber(jvm.gcTimeMs),
      "uptime_ms" -> JsNumber(jvm.uptimeMs),
      "threads" -> JsNumber(jvm.threads),
      "published_accepted" -> JsNumber(hubs.acceptedCount),
      "published_dropped" -> JsNumber(hubs.droppedCount)
    )

object Routes:
  /** Positions kept for one viewer that reads slower than the event publishes. */
  val ViewerBuffer = 64

  /** The HTTP answer to a publish: 202 only when the hub took the location. */
  def answer(outcome: Try[Published]): (StatusCode, JsObject) =
    outcome match
      case Success(Published.Accepted) => StatusCodes.Accepted -> JsObject("status" -> JsString("accepted"))
      case Success(Published.Dropped) =>
        StatusCodes.ServiceUnavailable -> JsObject("error" -> JsString("location dropped: the event did not take it"))
      case Failure(e) =>
        StatusCodes.ServiceUnavailable -> JsObject("error" -> JsString(s"location not published: ${e.getMessage}"))

/** How much of one client message has been read, and whether it has ended. */
private final case class Read(bytes: Long, ended: Boolean)
