package leaklab.mergehub

import java.lang.management.{ManagementFactory, MemoryType}

import scala.jdk.CollectionConverters.*

/** The JVM's own view of its memory, read from the platform management beans.
  *
  * `heapAfterGcBytes` is the heap as the last collection left it (HeapAfterGc): the
  * live set plus whatever that collection did not reach, without the garbage
  * allocated since. It is the series a leak shows in; `heapUsedBytes` is the sawtooth
  * around it. `poolsCollectionUsageBytes` sums MemoryPoolMXBean.getCollectionUsage over
  * the heap pools, kept to show why it is not used (see HeapAfterGc).
  */
object JvmMetrics:

  final case class Snapshot(
      heapUsedBytes: Long,
      heapCommittedBytes: Long,
      heapMaxBytes: Long,
      heapAfterGcBytes: Long,
      poolsCollectionUsageBytes: Long,
      gcCount: Long,
      gcTimeMs: Long,
      uptimeMs: Long,
      threads: Int
  )

  def snapshot(): Snapshot =
    val heap = ManagementFactory.getMemoryMXBean.getHeapMemoryUsage
    val heapPools = ManagementFactory.getMemoryPoolMXBeans.asScala.filter(_.getType == MemoryType.HEAP)
    val afterGc = heapPools.flatMap(p => Option(p.getCollectionUsage)).map(_.getUsed).sum
    val gcs = ManagementFactory.getGarbageCollectorMXBeans.asScala
    Snapshot(
      heapUsedBytes = heap.getUsed,
      heapCommittedBytes = heap.getCommitted,
      heapMaxBytes = heap.getMax,
      heapAfterGcBytes = HeapAfterGc.bytes.getOrElse(afterGc),
      poolsCollectionUsageBytes = afterGc,
      gcCount = gcs.map(_.getCollectionCount.max(0L)).sum,
      gcTimeMs = gcs.map(_.getCollectionTime.max(0L)).sum,
      uptimeMs = ManagementFactory.getRuntimeMXBean.getUptime,
      threads = ManagementFactory.getThreadMXBean.getThreadCount
    )
