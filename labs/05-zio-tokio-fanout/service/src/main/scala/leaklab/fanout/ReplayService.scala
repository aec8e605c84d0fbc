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
      } *> ZIO.never).provide(Server.defaultWith(_.binding(settings.host, settings.port)))
