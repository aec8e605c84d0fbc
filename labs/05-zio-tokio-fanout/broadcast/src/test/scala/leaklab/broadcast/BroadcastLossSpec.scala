package leaklab.broadcast

import zio.*
import zio.test.*

/** The fan-out program's claims on a small run in which the slow subscriber (0) must fall
  * behind: 3,000 events at 20,000/s through 256 slots, the slow one reading 2,000/s.
  * Behind a sliding hub it loses events; resyncing from the log it loses none. On the
  * real clock, which the program paces itself by.
  */
object BroadcastLossSpec extends ZIOSpecDefault:

  private val small =
    BroadcastLoss.Settings(subscribers = 3, events = 3_000, rate = 20_000.0, slowRate = 2_000.0, capacity = 256)

  def spec = suite("BroadcastLoss")(
    test("behind a sliding hub, a slow subscriber loses events and reads nothing from the log") {
      BroadcastLoss.runOnce(small, "sliding").map((_, _, tallies) =>
        assertTrue(tallies.head.received < 3_000, tallies.head.gaps == 3_000 - tallies.head.received) &&
          assertTrue(tallies.head.recovered == 0)
      )
    },
    test("resyncing from the log by sequence number, nobody loses any") {
      BroadcastLoss.runOnce(small, "sliding-resync").map((_, _, tallies) =>
        assertTrue(tallies.head.gaps > 0, tallies.head.recovered > 0, tallies.forall(_.received == 3_000))
      )
    }
  ) @@ TestAspect.withLiveClock @@ TestAspect.sequential @@ TestAspect.timeout(60.seconds)
