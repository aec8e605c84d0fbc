package leaklab.mergehub

import java.lang.management.ManagementFactory
import javax.management.ObjectName

/** `jcmd <pid> GC.class_histogram`, asked of the JVM from inside.
  *
  * The load program calls this the moment its load phase ends, so a run has a
  * histogram "after load" as well as the harness's jcmd one "after idle". Like jcmd it
  * runs a full collection first: it counts live objects only.
  */
object ClassHistogram:
  private val diagnostics = ObjectName("com.sun.management:type=DiagnosticCommand")

  def take(): String =
    ManagementFactory.getPlatformMBeanServer
      .invoke(diagnostics, "gcClassHistogram", Array[AnyRef](Array.empty[String]), Array(classOf[Array[String]].getName))
      .toString
