package leaklab.fanout

import zio.*
import zio.http.*

/** The HTTP API, identical in the ZIO and Tokio services:
  *
  *  - `GET /replay?match=<id>&from=<n>&count=<k>`: k events of match id from seq n, as
  *    newline-delimited JSON, streamed; 400 with a one-line reason on bad parameters;
  *  - `GET /healthz`: 200 "ok";
  *  - `GET /metrics`: one JSON object (heap, heap after GC, counters);
  *  - another method on one of these paths: 405 with `Allow: GET` (axum gives the Tokio
  *    service the same, and serves HEAD too);
  *  - anything else: 404.
  */
object Api:

  /** The methods a known path does not serve: all the standard ones but GET. */
  private val otherMethods =
    List(Method.POST, Method.PUT, Method.PATCH, Method.DELETE, Method.HEAD, Method.OPTIONS, Method.TRACE, Method.CONNECT)

  final case class ReplayRequest(matchId: Int, from: Int, count: Int)

  /** Checks the query of a replay request against the match log. */
  def parseReplay(param: String => Option[String], log: MatchLog, maxCount: Int): Either[String, ReplayRequest] =
    def int(name: String): Either[String, Int] =
      param(name) match
        case None => Left(s"missing parameter $name")
        case Some(raw) => raw.toIntOption.toRight(s"parameter $name: not an integer: $raw")
    for
      matchId <- int("match")
      from <- int("from")
      count <- int("count")
      _ <- Either.cond(matchId >= 0 && matchId < log.matches, (), s"match $matchId: must be 0..${log.matches - 1}")
      _ <- Either.cond(from >= 0 && from < log.eventsPerMatch, (), s"from $from: must be 0..${log.eventsPerMatch - 1}")
      _ <- Either.cond(count >= 1 && count <= maxCount, (), s"count $count: must be 1..$maxCount")
      _ <- Either.cond(
        from.toLong + count <= log.eventsPerMatch,
        (),
        s"from $from + count $count: past the end of the match (${log.eventsPerMatch} events)"
      )
    yield ReplayRequest(matchId, from, count)

  def routes(log: MatchLog, maxCount: Int, fanOut: FanOut, metrics: Metrics): Routes[Any, Response] =
    served(log, maxCount, fanOut, metrics) ++ onlyGet("healthz", "metrics", "replay")

  private def served(log: MatchLog, maxCount: Int, fanOut: FanOut, metrics: Metrics): Routes[Any, Response] =
    Routes(
      Method.GET / "healthz" -> handler { (_: Request) => Response.text("ok") },
      Method.GET / "metrics" -> handler { (_: Request) =>
        ZIO.succeed(Response.json(metrics.json(fanOut.openSubscriptions)))
      },
      Method.GET / "replay" -> handler { (req: Request) =>
        val query = req.url.queryParams
        parseReplay(name => query.getAll(name).headOption, log, maxCount) match
          case Left(reason) =>
            ZIO.succeed(Response.text(reason + "\n").status(Status.BadRequest))
          case Right(r) =>
            // The count is a side effect: part of the effect the handler returns.
            ZIO.succeed(metrics.requestsServed.increment()).as(
              Response(
                status = Status.Ok,
                headers = Headers("content-type", "application/x-ndjson"),
                body = Body.fromStreamChunked(fanOut.replay(r.matchId, r.from, r.count))
              )
            )
      }
    )

  /** Every other method on `paths` gets 405 with `Allow: GET` (RFC 9110, 15.5.6), where
    * zio-http would answer 404, as if the path did not exist.
    */
  private def onlyGet(paths: String*): Routes[Any, Response] =
    val notAllowed = Response(Status.MethodNotAllowed, Headers(Header.Allow(NonEmptyChunk(Method.GET))))
    Routes.fromIterable(for path <- paths; method <- otherMethods yield method / path -> handler(notAllowed))
