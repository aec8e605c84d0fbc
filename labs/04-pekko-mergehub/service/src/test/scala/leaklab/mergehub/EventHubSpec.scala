package leaklab.mergehub

import scala.concurrent.{Await, ExecutionContext, Future}
import scala.concurrent.duration.*

import org.apache.pekko.actor.ClassicActorSystemProvider
import org.apache.pekko.actor.testkit.typed.scaladsl.ActorTestKit
import org.apache.pekko.stream.Materializer
import org.apache.pekko.stream.scaladsl.Sink
import org.apache.pekko.stream.testkit.TestSubscriber
import org.apache.pekko.stream.testkit.scaladsl.TestSink
import org.scalatest.BeforeAndAfterAll
import org.scalatest.matchers.should.Matchers
import org.scalatest.wordspec.AnyWordSpec

/** The hub's contract, whatever its insides: subscribers receive what is published,
  * and a publisher is never held up by an event nobody is watching.
  */
final class EventHubSpec extends AnyWordSpec with Matchers with BeforeAndAfterAll:
  private val testKit = ActorTestKit()
  private given ClassicActorSystemProvider = testKit.system
  private given Materializer = Materializer(testKit.system)
  private given ExecutionContext = testKit.system.executionContext
  private val bufferSize = 16

  override def afterAll(): Unit = testKit.shutdownTestKit()

  private def at(skater: String, i: Int) = Location(skater, 45.0, 7.0, i.toLong)

  "an event hub" should {
    "deliver every location to a subscriber that keeps up (the hub drains)" in {
      val hub = EventHub(bufferSize)
      val probe = hub.subscribe.runWith(TestSink[Location]())
      probe.request(100)
      // The subscriber registers with the BroadcastHub asynchronously: wait until a
      // marker gets through before counting.
      awaitDelivery(hub, "marker", probe)
      val sent = (1 to bufferSize / 2).map(at("s-1", _))
      sent.foreach(l => Await.result(hub.publish(l), 3.seconds))
      // A MergeHub keeps no order between its producers: compare as sets.
      sent.map(_ => nextIgnoringMarkers(probe)) should contain theSameElementsAs sent
      probe.cancel()
    }

    "give each of two subscribers its own copy" in {
      val hub = EventHub(bufferSize)
      val first = hub.subscribe.runWith(TestSink[Location]())
      val second = hub.subscribe.runWith(TestSink[Location]())
      first.request(100)
      second.request(100)
      awaitDelivery(hub, "marker", first)
      awaitDelivery(hub, "marker-2", second)
      Await.result(hub.publish(at("s-2", 1)), 3.seconds)
      nextIgnoringMarkers(first) shouldBe at("s-2", 1)
      nextIgnoringMarkers(second) shouldBe at("s-2", 1)
    }

    "never make a publisher wait when nobody subscribes" in {
      val hub = EventHub(bufferSize)
      // Far more than every buffer in the hub together; each publish must still finish.
      val all = Future.sequence((1 to bufferSize * 20).map(i => hub.publish(at("s-3", i))))
      Await.result(all, 5.seconds) should have size (bufferSize * 20).toLong
    }

    "serve a subscriber that joins after locations were published unseen" in {
      val hub = EventHub(bufferSize)
      (1 to bufferSize * 4).foreach(i => Await.result(hub.publish(at("early", i)), 3.seconds))
      val late = hub.subscribe.filter(_.skater == "late").runWith(Sink.head)
      keepPublishingUntil(hub, "late", late.isCompleted)
      Await.result(late, 5.seconds).skater shouldBe "late"
    }

    "deliver the last location it answered Accepted once a stalled subscriber reads again" in {
      // Accepted means the location is in the event's stream. A hub may drop locations a
      // stalled subscriber has not read (the oldest, say), but the last one it accepted
      // must reach the subscriber when it resumes: a location answered Accepted and then
      // thrown away is a refusal reported as a success.
      val hub = EventHub(bufferSize)
      val probe = hub.subscribe.runWith(TestSink[Location]())
      // Demand for one location: once a marker arrives the subscriber is registered, and
      // it then reads nothing more while far more than every buffer in the hub holds is
      // published, then, once those have all reached the hub, one last location.
      probe.request(1)
      val registered = java.util.concurrent.atomic.AtomicBoolean(false)
      val ticker = Future(keepPublishingUntil(hub, "marker", registered.get))
      try probe.expectNext(5.seconds)
      finally registered.set(true)
      Await.result(ticker, 5.seconds)
      // In rounds, with a pause after each for the hub to move what it can: one burst
      // may end before the hub has filled its buffers, and leave room for the last one.
      val earlier = (0 until 3).flatMap { round =>
        val sent = (1 to bufferSize * 20).map(i => hub.publish(at("s-5", round * 1000 + i)))
        Thread.sleep(700)
        sent
      }
      val last = hub.publish(at("last", 1))
      probe.request(Long.MaxValue)
      Await.ready(Future.sequence(earlier), 10.seconds)
      if Await.result(last, 10.seconds) == Published.Accepted then
        val after = probe.receiveWithin(5.seconds)
        assert(
          after.exists(_.skater == "last"),
          s"the last location answered Accepted never reached the subscriber (${after.size} arrived once it read again)"
        )
      probe.cancel()
    }

    "stop answering Accepted once the event's stream has stopped" in {
      // The other half of "Accepted means the location is in the event's stream": a
      // location the hub cannot take is answered Dropped (or fails with its reason),
      // never Accepted. Whatever the design keeps per event, nothing can take a location
      // once the materializer that runs the event's streams has shut down (as it does
      // when the service stops), so that is the situation tested: the hub gets its own
      // materializer, accepts while it runs, and must stop saying Accepted once stopped.
      val own = Materializer(testKit.system)
      val hub = EventHub(bufferSize)(using own)
      Await.result(hub.publish(at("s-6", 0)), 3.seconds) shouldBe Published.Accepted
      own.shutdown()
      // The streams stop asynchronously: publish until an answer is not Accepted.
      val deadline = 5.seconds.fromNow
      var i = 0
      var answers = Vector.empty[String]
      while answers.lastOption.forall(_ == "Accepted") && deadline.hasTimeLeft() do
        i += 1
        // A publish that throws, fails or answers Dropped did not say Accepted.
        val answer = scala.util.Try(hub.publish(at("s-6", i))).flatMap(f => Await.ready(f, 3.seconds).value.get)
        answers = answers :+ answer.fold(e => s"failed: ${e.getMessage}", _.toString)
        Thread.sleep(20)
      if answers.last == "Accepted" then
        fail(s"${answers.size} publishes over 5 s after the event's materializer shut down were all answered Accepted")
    }
  }

  /** Publishes `skater` locations every 10 ms until the probe sees one. */
  private def awaitDelivery(hub: EventHub, skater: String, probe: TestSubscriber.Probe[Location]): Unit =
    val seen = java.util.concurrent.atomic.AtomicBoolean(false)
    val ticker = Future(keepPublishingUntil(hub, skater, seen.get))
    try
      while probe.expectNext(5.seconds).skater != skater do ()
    finally seen.set(true)
    Await.result(ticker, 5.seconds)

  /** The next location that is not one of the markers `awaitDelivery` published. */
  private def nextIgnoringMarkers(probe: TestSubscriber.Probe[Location]): Location =
    Iterator.continually(probe.expectNext(3.seconds)).dropWhile(_.skater.startsWith("marker")).next()

  private def keepPublishingUntil(hub: EventHub, skater: String, done: => Boolean): Unit =
    val deadline = 5.seconds.fromNow
    var i = 0
    while !done && deadline.hasTimeLeft() do
      i += 1
      Await.result(hub.publish(at(skater, i)), 3.seconds)
      Thread.sleep(10)
