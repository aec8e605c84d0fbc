package leaklab.fanout

import zio.test.*

object SettingsSpec extends ZIOSpecDefault:
  def spec = suite("command line")(
    test("--port is required and binds loopback") {
      assertTrue(
        Settings.parse(Nil).isLeft,
        Settings.parse(List("--port", "8080")).map(_.host) == Right("127.0.0.1"),
        Settings.parse(List("--port", "8080")).map(_.log) == Right(MatchLog.default)
      )
    },
    test("bad values are refused") {
      assertTrue(
        Settings.parse(List("--port", "http")).isLeft,
        Settings.parse(List("--port", "70000")).isLeft,
        Settings.parse(List("--port", "1", "--players", "0")).isLeft,
        Settings.parse(List("--port", "1", "--bogus", "3")).isLeft
      )
    }
  )
