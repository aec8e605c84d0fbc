package leaklab.mergehub

import scala.util.{Failure, Success}

import org.apache.pekko.http.scaladsl.marshallers.sprayjson.SprayJsonSupport.*
import org.apache.pekko.http.scaladsl.model.{ContentTypes, HttpEntity, StatusCodes}
import org.apache.pekko.http.scaladsl.model.ws.{BinaryMessage, Message, TextMessage}
import org.apache.pekko.http.scaladsl.server.{Directives, Route}
import org.apache.pekko.stream.Materializer
import org.apache.pekko.stream.scaladsl.{Flow, Sink}
import spray.json.*

/** The HTTP surface: publish, subscribe (WebSocket), health, metrics, diagnostics.
  *
  * Input is bounded and validated before it reaches a hub: a body over `maxBodyBytes`
  * is refused with 413, JSON that is not a location with 400, an unknown event with 404.
  */
final class Routes(hubs: Hubs, maxBodyBytes: Long)(using mat: Materializer) extends Directives:

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

  private def knownEvent(event: String)(inner: => Route): Route =
    if hubs.known(event) then inner
    else complete(StatusCodes.NotFound, JsObject("error" -> JsString(s"unknown event $event")))

  private def publish(event: String, location: Location): Route =
    Location.problems(location) match
      case Nil =>
        // knownEvent has checked the event, so the Option is always defined here.
        val result = hubs.publish(event, location).get
        onComplete(result) {
          case Success(published) =>
            complete(StatusCodes.Accepted, JsObject("status" -> JsString(published.toString.toLowerCase)))
          case Failure(e) =>
            complete(StatusCodes.ServiceUnavailable, JsObject("error" -> JsString(e.getMessage)))
        }
      case problems =>
        complete(StatusCodes.BadRequest, JsObject("error" -> JsArray(problems.map(JsString(_)).toVector)))

  /** Server to client only: the event's locations as JSON text frames. Whatever the
    * client sends is read and discarded (a streamed frame must be drained, or the
    * connection stalls), and closing either side ends the other.
    */
  private def feed(event: String): Flow[Message, Message, Any] =
    val drain = Sink.foreach[Message] {
      case text: TextMessage => text.textStream.runWith(Sink.ignore)
      case binary: BinaryMessage => binary.dataStream.runWith(Sink.ignore)
    }
    val out = hubs.subscribe(event).get.map(l => TextMessage.Strict(l.toJson.compactPrint))
    Flow.fromSinkAndSourceCoupled(drain, out)

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
