package leaklab.fanout

import java.lang.management.{ManagementFactory, MemoryType}
import java.util.concurrent.atomic.LongAdder

import scala.jdk.CollectionConverters.*

/** Counters the routes bump, plus the JVM's view of its heap, rendered as one JSON object. */
final class Metrics:
  val requestsServed = LongAdder()
  val eventsStreamed = LongAdder()

  def json(openSubscriptions: Long): String =
    val heap = ManagementFactory.getMemoryMXBean.getHeapMemoryUsage
    val pools = ManagementFactory.getMemoryPoolMXBeans.asScala.filter(_.getType == MemoryType.HEAP)
    val poolsAfterGc = pools.flatMap(p => Option(p.getCollectionUsage)).map(_.getUsed).sum
    val gcs = ManagementFactory.getGarbageCollectorMXBeans.asScala
    val fields = List(
      "heap_used_bytes" -> heap.getUsed,
      "heap_committed_bytes" -> heap.getCommitted,
      "heap_max_bytes" -> heap.getMax,
      "heap_after_gc_bytes" -> HeapAfterGc.bytes.getOrElse(poolsAfterGc),
      "gc_count" -> gcs.map(_.getCollectionCount.max(0L)).sum,
      "gc_time_ms" -> gcs.map(_.getCollectionTime.max(0L)).sum,
      "uptime_ms" -> ManagementFactory.getRuntimeMXBean.getUptime,
      "threads" -> ManagementFactory.getThreadMXBean.getThreadCount.toLong,
      "requests_served" -> requestsServed.sum,
      "events_streamed" -> eventsStreamed.sum,
      "open_subscriptions" -> openSubscriptions
    )
    fields.map((k, v) => s""""$k":$v""").mkString("{", ",", "}")
