package leaklab.mergehub

import java.io.ByteArrayOutputStream
import java.net.{Socket, SocketTimeoutException}
import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.{US_ASCII, UTF_8}

import scala.concurrent.Await
import scala.concurrent.duration.*
import scala.util.Using

import org.apache.pekko.http.scaladsl.Http
import org.apache.pekko.http.scaladsl.model.{ContentTypes, HttpEntity, StatusCodes}
import org.apache.pekko.http.scaladsl.testkit.{ScalatestRouteTest, WSProbe}
import org.apache.pekko.http.scaladsl.server.Route
import org.scalatest.matchers.should.Matchers
import org.scalatest.wordspec.AnyWordSpec
import spray.json.*

/** The HTTP surface: what a client may send, and what it gets back. */
final class RoutesSpec extends AnyWordSpec with Matchers with ScalatestRouteTest:
  private val hubs = Hubs(Seq("race-1", "race-2"), bufferSize = 16)
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
    "refuse a body that is not UTF-8, rather than forward replacement characters" in {
      val bytes = valid.getBytes(UTF_8).map(b => if b == 's'.toByte then 0xff.toByte else b)
      Post("/events/race-1/locations", HttpEntity(ContentTypes.`application/json`, bytes)) ~> route ~> check {
        status shouldBe StatusCodes.BadRequest
        responseAs[String] should include("UTF-8")
      }
    }
    "answer 503 with the reason when the hub drops or fails a location, never 202" in {
      val (dropped, why) = Routes.answer(scala.util.Success(Published.Dropped))
      dropped shouldBe StatusCodes.ServiceUnavailable
      why.fields("error").toString should include("did not take it")
      val (failed, reason) = Routes.answer(scala.util.Failure(IllegalStateException("the event is closed")))
      failed shouldBe StatusCodes.ServiceUnavailable
      reason.fields("error").toString should include("the event is closed")
      Routes.answer(scala.util.Success(Published.Accepted))._1 shouldBe StatusCodes.Accepted
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
    "keep serving a viewer that reads while another viewer has stopped reading" in {
      val stalled = WSProbe()
      val reader = WSProbe()
      WS("/events/race-2/subscribe", stalled.flow) ~> route ~> check {
        isWebSocketUpgrade shouldBe true
        WS("/events/race-2/subscribe", reader.flow) ~> route ~> check {
          isWebSocketUpgrade shouldBe true
          // Both register with the hub asynchronously: publish until the reader gets one.
          Iterator
            .continually {
              Post("/events/race-2/locations", json(valid)) ~> route ~> check(status shouldBe StatusCodes.Accepted)
              reader.inProbe.request(1)
              reader.inProbe.receiveWithin(200.millis)
            }
            .take(25)
            .find(_.nonEmpty) should not be empty
          // The stalled viewer never requests. Far more than the hub's buffer (16) and the
          // viewer's own: without a dropping buffer per viewer the reader stops after ~16.
          val count = 16 * 8
          // A hub that refuses a location when its queue is full (503 with the reason) may
          // refuse a few when the machine is busy and its stream runs late; an event stalled
          // by the viewer that stopped reading refuses nearly all once its buffers are full
          // (about 32). So: at least half accepted, and the reader gets the last accepted.
          val accepted = (1 to count).filter { i =>
            val at = s"""{"skater":"s-2","lat":45.0,"lon":7.0,"timestamp":$i}"""
            Post("/events/race-2/locations", json(at)) ~> route ~> check {
              status should (equal(StatusCodes.Accepted) or equal(StatusCodes.ServiceUnavailable))
              status == StatusCodes.Accepted
            }
          }
          withClue(s"${accepted.size} of $count locations accepted: ")(accepted.size should be >= count / 2)
          reader.inProbe.request(count.toLong * 2)
          val last = s""""timestamp":${accepted.last}"""
          val seen = Iterator
            .continually(reader.inProbe.receiveWithin(3.seconds, 1))
            .takeWhile(_.nonEmpty)
            .flatten
            .collect { case m: org.apache.pekko.http.scaladsl.model.ws.TextMessage.Strict => m.text }
            .find(_.contains(last))
          seen should not be empty
          reader.sendCompletion()
        }
        stalled.sendCompletion()
      }
    }
    "refuse an unknown event" in {
      Get("/events/nope/subscribe") ~> route ~> check {
        status shouldBe StatusCodes.NotFound
      }
    }
    // What follows goes over a real socket: the test kit hands messages to the route
    // as objects, so it can neither send a malformed frame nor see a close code.
    "close a connection whose client announces a 2^62-byte frame and keeps sending" in {
      val closed = rawWebSocket(frameHeader(1L << 62) ++ Array.fill(4096)('a'.toByte), within = 10.seconds)
      closed.flatMap(closeCode) should not be empty
    }
    "close a connection whose client announces a 2^62-byte frame and stalls" in {
      val closed = rawWebSocket(frameHeader(1L << 62) ++ "abc".getBytes(US_ASCII), within = 10.seconds)
      closed.flatMap(closeCode) should not be empty
    }
    "close with 1007 on text that is not UTF-8" in {
      val payload = Array(0xff.toByte, 0xfe.toByte)
      val closed = rawWebSocket(frameHeader(payload.length.toLong) ++ payload, within = 10.seconds)
      closed.flatMap(closeCode) shouldBe Some(1007)
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

  // -- a raw WebSocket client ------------------------------------------------------

  /** A second instance of the routes on a real loopback port, with a short message
    * timeout and an event nobody publishes to, for the raw-socket tests.
    */
  private lazy val rawPort: Int =
    val quiet = Route.seal(Routes(Hubs(Seq("quiet"), bufferSize = 16), maxBodyBytes = 512, 1.second).route)
    Await.result(Http().newServerAt("127.0.0.1", 0).bind(quiet), 10.seconds).localAddress.getPort

  /** The header of a masked text frame (FIN set) announcing `length` bytes; the mask
    * key is zero, so the payload goes as it is.
    */
  private def frameHeader(length: Long): Array[Byte] =
    val size =
      if length < 126 then Array(length.toByte)
      else Array(127.toByte) ++ ByteBuffer.allocate(8).putLong(length).array()
    Array(0x81.toByte) ++ size.updated(0, (size(0) | 0x80).toByte) ++ Array.fill(4)(0.toByte)

  /** Upgrades to a WebSocket on `/events/quiet/subscribe`, then (once the 101 is in,
    * as a client must wait for it) sends `bytes` as they are. Returns what the server
    * sent if, within `within`, it started the closing handshake (its first frame a
    * close frame, read whole) or closed the connection; None if it did neither.
    *
    * It stops at the close frame: the server has closed its side then, and the TCP
    * close follows when pekko-http's closing handshake gives up on an answer, about
    * 5 s later for a client stuck mid-frame. Waiting for it cost 16 s a run and tested
    * pekko-http, not these routes.
    */
  private def rawWebSocket(bytes: Array[Byte], within: FiniteDuration): Option[Array[Byte]] =
    Using.resource(Socket("127.0.0.1", rawPort)) { socket =>
      socket.setSoTimeout(within.toMillis.toInt)
      val (in, out) = (socket.getInputStream, socket.getOutputStream)
      out.write(
        ("GET /events/quiet/subscribe HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n" +
          "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" +
          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n").getBytes(US_ASCII)
      )
      val head = ByteArrayOutputStream()
      while !head.toString(US_ASCII).endsWith("\r\n\r\n") do head.write(in.read())
      head.toString(US_ASCII) should startWith("HTTP/1.1 101")
      out.write(bytes)
      out.flush()
      val deadline = within.fromNow
      val frames = ByteArrayOutputStream()
      val buffer = new Array[Byte](8192)
      def readToEnd(): Boolean =
        try
          val n = in.read(buffer)
          if n < 0 then true
          else
            frames.write(buffer, 0, n)
            closeFrameRead(frames.toByteArray) || (deadline.hasTimeLeft() && readToEnd())
        catch case _: SocketTimeoutException => false
      Option.when(readToEnd())(frames.toByteArray)
    }

  /** Whether the first frame the server sent is a close frame, and all of it is in. A
    * server's frames are unmasked, and a close frame's payload is under 126 bytes.
    */
  private def closeFrameRead(frames: Array[Byte]): Boolean =
    frames.length >= 2 && (frames(0) & 0x0f) == 8 && frames.length >= 2 + (frames(1) & 0x7f)

  /** The code of the server's close frame, if the first frame it sent was one. */
  private def closeCode(frames: Array[Byte]): Option[Int] =
    Option.when(frames.length >= 4 && (frames(0) & 0x0f) == 8)(((frames(2) & 0xff) << 8) | (frames(3) & 0xff))
