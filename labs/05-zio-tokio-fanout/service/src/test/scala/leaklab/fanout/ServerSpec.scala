package leaklab.fanout

import java.io.ByteArrayOutputStream
import java.net.Socket
import java.nio.charset.StandardCharsets.US_ASCII
import java.util.concurrent.ConcurrentLinkedQueue
import java.util.logging.{Handler, Level, LogRecord, Logger}

import scala.jdk.CollectionConverters.*

import zio.*
import zio.http.*
import zio.test.*

/** The service as a client meets it, over a real loopback socket with the server's own
  * settings: what zio-http and Netty do with a request before any route sees it.
  */
object ServerSpec extends ZIOSpecDefault:

  private val log = MatchLog(matches = 2, players = 2, eventsPerPlayer = 5)

  private val routes =
    val metrics = Metrics()
    Api.routes(log, maxCount = 10, FanOut(log, readAhead = 2, metrics), metrics)

  /** Sends `head` and `body` as they are; then, when `hangUp`, closes at once, else
    * half-closes and reads the reply to its end.
    */
  private def exchange(port: Int, head: String, body: String = "", hangUp: Boolean = false): Task[String] =
    ZIO.attemptBlocking {
      val socket = Socket("127.0.0.1", port)
      try
        socket.setSoTimeout(5000)
        socket.getOutputStream.write((head + "\r\n\r\n" + body).getBytes(US_ASCII))
        if hangUp then ""
        else
          socket.shutdownOutput()
          val reply = ByteArrayOutputStream()
          socket.getInputStream.transferTo(reply)
          reply.toString(US_ASCII)
      finally socket.close()
    }

  /** What Netty logs itself (through java.util.logging, as no SLF4J is on the class path). */
  private val nettyLog = ZIO.acquireRelease(ZIO.succeed {
    val records = ConcurrentLinkedQueue[LogRecord]()
    val handler = new Handler:
      def publish(record: LogRecord): Unit = records.add(record)
      def flush(): Unit = ()
      def close(): Unit = ()
    Logger.getLogger("io.netty").addHandler(handler)
    (records, handler)
  })((_, handler) => ZIO.succeed(Logger.getLogger("io.netty").removeHandler(handler))).map(_._1)

  def spec = suite("the server")(
    test("a request whose body is cut short is answered 413, without a stack trace in the log") {
      val truncated = "POST /replay?match=0&from=0&count=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 100"
      ZIO.scoped {
        for
          netty <- nettyLog
          port <- Server.install(routes)
          _ <- exchange(port, truncated, body = "abc", hangUp = true)
          cutShort <- exchange(port, truncated, body = "abc")
          next <- exchange(port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close")
          // The first client's hang-up is handled on Netty's event loop: give it a moment.
          _ <- ZIO.sleep(200.millis)
          logged <- ZTestLogger.logOutput
          warnings = logged.filter(_.logLevel >= LogLevel.Warning).map(_.message())
          nettyWarnings = netty.asScala.filter(_.getLevel.intValue >= Level.WARNING.intValue).map(_.getMessage).toList
        yield assertTrue(
          cutShort.startsWith("HTTP/1.1 413"),
          next.startsWith("HTTP/1.1 200"),
          warnings.isEmpty,
          nettyWarnings.isEmpty
        )
      }
    }
  ).provideShared(Server.defaultWith(ReplayService.serverConfig("127.0.0.1", 0))) @@ TestAspect.withLiveClock
