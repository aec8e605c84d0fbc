package leaklab.fanout

import java.lang.management.{ManagementFactory, MemoryType}
import java.util.concurrent.atomic.AtomicLong
import javax.management.{Notification, NotificationEmitter, NotificationListener}
import javax.management.openmbean.CompositeData

import scala.jdk.CollectionConverters.*

import com.sun.management.GarbageCollectionNotificationInfo

/** Heap in use right after the latest collection, young or full.
  *
  * Every collector bean sends a notification per collection carrying each pool's usage
  * after it. Summing the heap pools gives the live set plus whatever that collection left
  * behind, without the garbage allocated since: the series a leak climbs in.
  */
object HeapAfterGc:
  private val last = AtomicLong(-1L)

  private lazy val heapPoolNames: Set[String] =
    ManagementFactory.getMemoryPoolMXBeans.asScala.filter(_.getType == MemoryType.HEAP).map(_.getName).toSet

  private val onGc: NotificationListener = (n: Notification, _: AnyRef) =>
    if n.getType == GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION then
      val info = GarbageCollectionNotificationInfo.from(n.getUserData.asInstanceOf[CompositeData])
      val used = info.getGcInfo.getMemoryUsageAfterGc.asScala.iterator.collect {
        case (pool, usage) if heapPoolNames(pool) => usage.getUsed
      }.sum
      last.set(used)

  /** Registers the listener on every collector; call once at start-up. */
  def install(): Unit =
    ManagementFactory.getGarbageCollectorMXBeans.asScala.foreach {
      case emitter: NotificationEmitter => emitter.addNotificationListener(onGc, null, null)
      case _ => ()
    }

  /** Bytes after the last collection, or None before the first. */
  def bytes: Option[Long] = Some(last.get).filter(_ >= 0)
