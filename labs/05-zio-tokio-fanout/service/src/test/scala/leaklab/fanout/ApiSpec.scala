package leaklab.fanout

import zio.*
import zio.http.*
import zio.test.*

object ApiSpec extends ZIOSpecDefault:

  // A small log keeps the tests quick: 4 matches of 3 players x 10 events (30 per match).
  private val log = MatchLog(matches = 4, players = 3, eventsPerPlayer = 10)

  private final case class Reply(status: Status, body: String, headers: Headers = Headers.empty)

  private def call(path: String, method: Method = Method.GET): ZIO[Scope, Nothing, Reply] =
    val metrics = Metrics()
    val routes = Api.routes(log, maxCount = 20, FanOut(log, readAhead = 5, metrics), metrics)
    val url = URL.decode(path).toOption.get
    for
      response <- routes.runZIO(Request.get(url).copy(method = method))
      body <- response.body.asString.orDie
    yield Reply(response.status, body, response.headers)

  private def seqs(body: String): List[Int] =
    body.linesIterator.map(line => """"seq":(\d+)""".r.findFirstMatchIn(line).get.group(1).toInt).toList

  def spec = suite("replay service API")(
    test("a replay returns exactly the requested events, in order") {
      call("/replay?match=2&from=7&count=12").map { r =>
        assertTrue(
          r.status == Status.Ok,
          seqs(r.body) == (7 until 19).toList,
          r.body.linesIterator.toList == (7 until 19).map(seq => log.event(2, seq).line.stripSuffix("\n")).toList
        )
      }
    },
    test("a replay may end exactly at the end of the match") {
      call("/replay?match=0&from=25&count=5").map { r =>
        assertTrue(r.status == Status.Ok, seqs(r.body) == List(25, 26, 27, 28, 29))
      }
    },
    test("events are a pure function of (match, seq)") {
      val e = log.event(3, 13)
      assertTrue(
        e == log.event(3, 13),
        e.tick == 4,
        e.player == 1,
        e.x >= 0 && e.x < 4096,
        e.y >= 0 && e.y < 4096,
        e.line.startsWith("""{"match":3,"seq":13,"tick":4,"player":1,"kind":""""),
        e.line.endsWith("}\n")
      )
    },
    test("bad input is a 400 with a reason") {
      val bad = List(
        "/replay",
        "/replay?match=1&from=0",
        "/replay?match=x&from=0&count=1",
        "/replay?match=1&from=zero&count=1",
        "/replay?match=4&from=0&count=1",
        "/replay?match=-1&from=0&count=1",
        "/replay?match=1&from=30&count=1",
        "/replay?match=1&from=0&count=0",
        "/replay?match=1&from=0&count=21",
        "/replay?match=1&from=25&count=6",
        "/replay?match=1&from=0&count=99999999999"
      )
      ZIO.foreach(bad)(call(_)).map { results =>
        assertTrue(results.forall(r => r.status == Status.BadRequest && r.body.nonEmpty))
      }
    },
    test("an unknown path is a 404") {
      call("/nowhere").map(r => assertTrue(r.status == Status.NotFound))
    },
    test("another method on a known path is a 405 that says GET is allowed") {
      val wrong = List(Method.POST -> "/replay?match=1&from=0&count=1", Method.DELETE -> "/metrics", Method.PUT -> "/healthz")
      ZIO.foreach(wrong)((method, path) => call(path, method)).map { results =>
        assertTrue(
          results.forall(_.status == Status.MethodNotAllowed),
          results.forall(_.headers.get(Header.Allow).contains(Header.Allow(NonEmptyChunk(Method.GET))))
        )
      }
    },
    test("healthz says ok") {
      call("/healthz").map(r => assertTrue(r.status == Status.Ok, r.body == "ok"))
    },
    test("metrics is a JSON object with live, allocated and heap bytes and counters") {
      call("/metrics").map { r =>
        assertTrue(
          r.status == Status.Ok,
          r.body.startsWith("{"),
          List("live_bytes", "allocated_bytes", "heap_used_bytes", "requests_served", "events_streamed")
            .forall(k => r.body.contains(s""""$k":"""))
        )
      }
    }
  )
