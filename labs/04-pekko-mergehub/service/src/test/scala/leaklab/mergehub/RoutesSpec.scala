package leaklab.mergehub

import org.apache.pekko.http.scaladsl.model.{ContentTypes, HttpEntity, StatusCodes}
import org.apache.pekko.http.scaladsl.testkit.{ScalatestRouteTest, WSProbe}
import org.apache.pekko.http.scaladsl.server.Route
import org.scalatest.matchers.should.Matchers
import org.scalatest.wordspec.AnyWordSpec
import spray.json.*

/** The HTTP surface: what a client may send, and what it gets back. */
final class RoutesSpec extends AnyWordSpec with Matchers with ScalatestRouteTest:
  private val hubs = Hubs(Seq("race-1"), bufferSize = 16)
  private val route = Route.seal(Routes(hubs, maxBodyBytes = 512).route)

  private def json(body: String) = HttpEntity(ContentTypes.`application/json`, body)
  private val valid = """{"skater":"s-1","lat":45.07,"lon":7.68,"timestamp":1}"""

  "POST /events/{event}/locations" should {
    "accept a valid location" in {
      Post("/events/race-1/locations", json(valid)) ~> route ~> check {
        status shouldBe StatusCodes.Accepted
      }
    }
    "refuse a body that is not JSON" in {
      Post("/events/race-1/locations", json("{not json")) ~> route ~> check {
        status shouldBe StatusCodes.BadRequest
      }
    }
    "refuse JSON that is not a location" in {
      Post("/events/race-1/locations", json("""{"skater":"s-1"}""")) ~> route ~> check {
        status shouldBe StatusCodes.BadRequest
      }
    }
    "refuse a location out of range" in {
      Post("/events/race-1/locations", json("""{"skater":"s-1","lat":91,"lon":0,"timestamp":1}""")) ~> route ~> check {
        status shouldBe StatusCodes.BadRequest
        responseAs[String] should include("lat")
      }
    }
    "refuse an unknown event" in {
      Post("/events/nope/locations", json(valid)) ~> route ~> check {
        status shouldBe StatusCodes.NotFound
      }
    }
    "refuse an oversized body" in {
      val big = s"""{"skater":"${"x" * 1024}","lat":0,"lon":0,"timestamp":1}"""
      Post("/events/race-1/locations", json(big)) ~> route ~> check {
        status shouldBe StatusCodes.ContentTooLarge
      }
    }
  }

  "GET /events/{event}/subscribe" should {
    "stream published locations to a WebSocket client" in {
      val client = WSProbe()
      WS("/events/race-1/subscribe", client.flow) ~> route ~> check {
        isWebSocketUpgrade shouldBe true
        // Registration with the hub is asynchronous: publish until one arrives.
        val received = Iterator
          .continually {
            Post("/events/race-1/locations", json(valid)) ~> route ~> check(status shouldBe StatusCodes.Accepted)
            client.inProbe.request(1)
            client.inProbe.receiveWithin(scala.concurrent.duration.DurationInt(200).millis)
          }
          .take(25)
          .find(_.nonEmpty)
        received should not be empty
        client.sendCompletion()
      }
    }
    "refuse an unknown event" in {
      Get("/events/nope/subscribe") ~> route ~> check {
        status shouldBe StatusCodes.NotFound
      }
    }
  }

  "GET /metrics" should {
    "report the JVM's heap after GC and the publish counters" in {
      Get("/metrics") ~> route ~> check {
        val fields = responseAs[String].parseJson.asJsObject.fields
        fields.keySet should contain allOf ("heap_used_bytes", "heap_after_gc_bytes", "gc_count", "published_accepted")
      }
    }
  }

  "GET /healthz" should {
    "answer ok" in {
      Get("/healthz") ~> route ~> check(status shouldBe StatusCodes.OK)
    }
  }
