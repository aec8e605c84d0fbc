package leaklab.fanout

import zio.test.*

object MatchLogSpec extends ZIOSpecDefault:
  def spec = suite("match log")(
    test("lines are the same as the Tokio service's") {
      // The same golden lines are checked in ../tokio/src/matchlog.rs.
      val log = MatchLog.default
      assertTrue(
        log.eventsPerMatch == 18432,
        log.event(5, 1234).line ==
          "{\"match\":5,\"seq\":1234,\"tick\":17,\"player\":10,\"kind\":\"shot\",\"x\":3287,\"y\":1113}\n",
        log.event(0, 0).line ==
          "{\"match\":0,\"seq\":0,\"tick\":0,\"player\":0,\"kind\":\"death\",\"x\":2845,\"y\":919}\n",
        log.event(63, 18431).line ==
          "{\"match\":63,\"seq\":18431,\"tick\":255,\"player\":71,\"kind\":\"death\",\"x\":1307,\"y\":3401}\n"
      )
    }
  )
