package leaklab.fanout

import zio.*
import zio.http.*

/** Serves match replays on 127.0.0.1:--port until SIGTERM/SIGINT (ZIO's shutdown hook
  * interrupts the server fiber, which closes the listener).
  */
object ReplayService extends ZIOAppDefault:

  override def run: ZIO[ZIOAppArgs, Any, Any] =
    getArgs.flatMap { args =>
      Settings.parse(args.toList) match
        case Left(problem) => Console.printLineError(problem).orDie *> exit(ExitCode(2))
        case Right(settings) => serve(settings)
    }

  private def serve(settings: Settings): ZIO[Any, Throwable, Nothing] =
    val metrics = Metrics()
    val fanOut = FanOut(settings.log, settings.readAhead, metrics)
    val routes = Api.routes(settings.log, settings.maxCount, fanOut, metrics)
    ZIO.succeed(HeapAfterGc.install()) *>
      (Server.install(routes).flatMap { port =>
        Console.printLine(
          s"listening on http://${settings.host}:$port: ${settings.log.matches} matches of " +
            s"${settings.log.players} players x ${settings.log.eventsPerPlayer} events"
        )
      } *> ZIO.never).provide(Server.defaultWith(serverConfig(settings.host, settings.port)))

  /** The server's settings beyond zio-http's defaults.
    *
    * The API takes no request body, so the largest body the server aggregates is 0
    * bytes: a request that announces one is answered 413 and closed as soon as its head
    * is read. With the default (100 KB), a client that hung up in the middle of a body
    * made Netty's aggregator fail with PrematureChannelClosureException, which zio-http
    * logs as a "Fatal exception in Netty" with a stack trace, and Netty once more.
    */
  def serverConfig(host: String, port: Int)(config: Server.Config): Server.Config =
    config.binding(host, port).disableRequestStreaming(0)
