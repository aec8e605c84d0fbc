package leaklab.mergehub

import spray.json.*

/** One position report from a skater during an event: what publishers send and
  * subscribers receive. Validated on the way in, so nothing malformed reaches a hub.
  */
final case class Location(skater: String, lat: Double, lon: Double, timestamp: Long)

object Location:
  val MaxSkaterLength = 64

  /** Why a well-formed JSON document is still not a location we accept. */
  def problems(l: Location): List[String] =
    List(
      Option.when(l.skater.isEmpty || l.skater.length > MaxSkaterLength)(
        s"skater must be 1 to $MaxSkaterLength characters"
      ),
      Option.when(!(l.lat >= -90 && l.lat <= 90))("lat must be within [-90, 90]"),
      Option.when(!(l.lon >= -180 && l.lon <= 180))("lon must be within [-180, 180]"),
      Option.when(l.timestamp < 0)("timestamp must not be negative")
    ).flatten

  import DefaultJsonProtocol.*
  given RootJsonFormat[Location] = jsonFormat4(Location.apply)
