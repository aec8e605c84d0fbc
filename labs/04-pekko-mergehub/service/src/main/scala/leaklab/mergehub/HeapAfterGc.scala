package leaklab.mergehub

import java.lang.management.{ManagementFactory, MemoryType}
import java.util.concurrent.atomic.AtomicLong
import javax.management.{Notification, NotificationEmitter, NotificationListener}
import javax.management.openmbean.CompositeData

import scala.jdk.CollectionConverters.*

import com.sun.management.GarbageCollectionNotificationInfo

/** Heap in use just after the most recent collection, whichever kind it was.
  *
  * Each collector's MXBean announces every collection with the usage of every pool
  * after it (the same figure JFR records as jdk.GCHeapSummary "After GC"). The pools'
  * own getCollectionUsage is not enough under G1: a young collection does not update
  * the old generation's figure, so that sum misses everything promoted since the last
  * mixed or full collection, which is exactly where a slow leak accumulates.
  */
object HeapAfterGc:
  private val latest = AtomicLong(-1L)
  private lazy val heapPools: Set[String] =
    ManagementFactory.getMemoryPoolMXBeans.asScala.filter(_.getType == MemoryType.HEAP).map(_.getName).toSet

  private val listener: NotificationListener = (n: Notification, _: AnyRef) =>
    if n.getType == GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION then
      val info = GarbageCollectionNotificationInfo.from(n.getUserData.asInstanceOf[CompositeData])
      val after = info.getGcInfo.getMemoryUsageAfterGc.asScala.collect {
        case (pool, usage) if heapPools(pool) => usage.getUsed
      }
      latest.set(after.sum)

  /** Starts listening; call once at start-up, before the first collection matters. */
  def install(): Unit =
    ManagementFactory.getGarbageCollectorMXBeans.asScala.foreach {
      case emitter: NotificationEmitter => emitter.addNotificationListener(listener, null, null)
      case _ => ()
    }

  /** Bytes after the last collection, or None before the first one. */
  def bytes: Option[Long] = Option(latest.get).filter(_ >= 0)
