// Lab 04: a live location service on Pekko Streams (Scala 3).
// Versions are pinned so a warm cache always resolves the same jars.
ThisBuild / scalaVersion := "3.3.7"
ThisBuild / organization := "dev.leaklab"

val pekkoVersion = "1.2.1"
val pekkoHttpVersion = "1.3.0"

// `stageArgs <file>` writes a java @argfile (`-cp <runtime classpath>`), so a run starts
// the service with plain `java @file leaklab.mergehub.locationService` and never waits on sbt.
val stageArgs = inputKey[Unit]("write a java @argfile with the runtime classpath")

lazy val root = (project in file("."))
  .settings(
    name := "location-service",
    libraryDependencies ++= Seq(
      "org.apache.pekko" %% "pekko-actor-typed" % pekkoVersion,
      "org.apache.pekko" %% "pekko-stream" % pekkoVersion,
      "org.apache.pekko" %% "pekko-slf4j" % pekkoVersion,
      "org.apache.pekko" %% "pekko-http" % pekkoHttpVersion,
      "org.apache.pekko" %% "pekko-http-spray-json" % pekkoHttpVersion,
      "ch.qos.logback" % "logback-classic" % "1.5.38",
      "org.apache.pekko" %% "pekko-stream-testkit" % pekkoVersion % Test,
      "org.apache.pekko" %% "pekko-actor-testkit-typed" % pekkoVersion % Test,
      "org.apache.pekko" %% "pekko-http-testkit" % pekkoHttpVersion % Test,
      "org.scalatest" %% "scalatest" % "3.2.19" % Test
    ),
    scalacOptions ++= Seq("-deprecation", "-feature", "-Werror"),
    // The entry point is Main.scala's `@main def locationService`, the class lab.toml starts.
    Compile / mainClass := Some("leaklab.mergehub.locationService"),
    // Test classes run one after another, each with its own actor system: on two cores,
    // running them in parallel only adds contention. (They run inside sbt's own JVM
    // because `Test / fork` is false by default; that is a separate setting.)
    Test / parallelExecution := false,
    stageArgs := {
      val target = complete.DefaultParsers.spaceDelimited("<file>").parsed.headOption
        .getOrElse(sys.error("usage: stageArgs <file>"))
      val cp = (Runtime / fullClasspath).value.files.map(_.getAbsolutePath)
      IO.write(file(target), "-cp " + cp.mkString(java.io.File.pathSeparator) + "\n")
    }
  )
