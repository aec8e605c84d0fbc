package leaklab.mergehub

import scala.concurrent.ExecutionContext
import scala.util.{Failure, Success}

import org.apache.pekko.actor.CoordinatedShutdown
import org.apache.pekko.actor.typed.ActorSystem
import org.apache.pekko.actor.typed.scaladsl.Behaviors
import org.apache.pekko.http.scaladsl.Http
import org.apache.pekko.stream.Materializer

/** Starts the actor system, opens one hub per event, and serves HTTP on loopback.
  * SIGTERM runs Pekko's coordinated shutdown: unbind, then stop the streams.
  */
@main def locationService(args: String*): Unit =
  Config.parse(args.toList, sys.env) match
    case Left(problem) =>
      System.err.println(problem)
      sys.exit(2)
    case Right(config) => serve(config)

private def serve(config: Config): Unit =
  HeapAfterGc.install()
  given system: ActorSystem[Nothing] = ActorSystem(Behaviors.empty, "location-service")
  given ExecutionContext = system.executionContext
  given Materializer = Materializer(system)

  val hubs = Hubs(config.events, config.bufferSize)
  val routes = Routes(hubs, config.maxBodyBytes)
  Http().newServerAt(config.host, config.port).bind(routes.route).onComplete {
    case Success(binding) =>
      binding.addToCoordinatedShutdown(hardTerminationDeadline = scala.concurrent.duration.DurationInt(5).seconds)
      system.log.info("listening on http://{} for events {}", binding.localAddress, config.events.mkString(","))
    case Failure(e) =>
      system.log.error("cannot bind {}:{}: {}", config.host, config.port, e.getMessage)
      CoordinatedShutdown(system).run(CoordinatedShutdown.UnknownReason)
  }
