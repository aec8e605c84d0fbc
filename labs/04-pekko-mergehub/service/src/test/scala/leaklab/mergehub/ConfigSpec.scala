package leaklab.mergehub

import org.scalatest.matchers.should.Matchers
import org.scalatest.wordspec.AnyWordSpec

/** Start-up settings: a bad one is a clear message at start-up, not a stack trace later. */
final class ConfigSpec extends AnyWordSpec with Matchers:
  private def bufferSize(n: Int) = Config.parse(List("--buffer-size", n.toString), Map.empty)

  "--buffer-size" should {
    "accept the powers of two BroadcastHub accepts, up to 2048" in {
      bufferSize(1).map(_.bufferSize) shouldBe Right(1)
      bufferSize(2048).map(_.bufferSize) shouldBe Right(2048)
    }
    "refuse 4096 and above, which BroadcastHub.sink would throw on" in {
      bufferSize(4096).left.toOption.get should include("from 1 to 2048")
      bufferSize(1 << 20).isLeft shouldBe true
    }
    "refuse sizes that are not a power of two, or not positive" in {
      all(Seq(0, -2, 100).map(bufferSize)) shouldBe a[Left[?, ?]]
    }
  }
