package leaklab.fanout

import java.lang.management.{ManagementFactory, MemoryType}
import java.util.concurrent.atomic.LongAdder

import scala.jdk.CollectionConverters.*

/** Counters the routes bump, plus the JVM's view of its heap, rendered as one JSON object.
  *
  * `live_bytes` and `allocated_bytes` carry the same meaning as in the Tokio service's
  * /metrics, so one sampler reads both: the heap in use after the latest collection (the
  * live set a leak grows) and every byte any thread ever allocated (its slope is the
  * allocation rate, which the churn of the case study drives).
  */
final class Metrics:
  private val threads = ManagementFactory.getThreadMXBean match
    case t: com.sun.management.ThreadMXBean if t.isThreadAllocatedMemorySupported => Some(t)
    case _ => None

  val requestsServed = LongAdder()
  val eventsStreamed = LongAdder()

  def json(openSubscriptions: Long): String =
    val heap = ManagementFactory.getMemoryMXBean.getHeapMemoryUsage
    val pools = ManagementFactory.getMemoryPoolMXBeans.asScala.filter(_.getType == MemoryType.HEAP)
    val poolsAfterGc = pools.flatMap(p => Option(p.getCollectionUsage)).map(_.getUsed).sum
    val gcs = ManagementFactory.getGarbageCollectorMXBeans.asScala
    val liveBytes = HeapAfterGc.bytes.getOrElse(poolsAfterGc)
    val fields = List(
      "live_bytes" -> liveBytes,
      // Live and terminated threads since start-up (JDK 14+); -1 where the JVM has no counter.
      "allocated_bytes" -> threads.fold(-1L)(_.getTotalThreadAllocatedBytes),
      "heap_used_bytes" -> heap.getUsed,
      "heap_committed_bytes" -> heap.getCommitted,
      "heap_max_bytes" -> heap.getMax,
      "gc_count" -> gcs.map(_.getCollectionCount.max(0L)).sum,
      "gc_time_ms" -> gcs.map(_.getCollectionTime.max(0L)).sum,
      "uptime_ms" -> ManagementFactory.getRuntimeMXBean.getUptime,
      "threads" -> ManagementFactory.getThreadMXBean.getThreadCount.toLong,
      "requests_served" -> requestsServed.sum,
      "events_streamed" -> eventsStreamed.sum,
      "open_subscriptions" -> openSubscriptions
    )
    fields.map((k, v) => s""""$k":$v""").mkString("{", ",", "}")
