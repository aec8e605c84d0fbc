// Lab 05's fan-out loss measurement on ZIO (README, "Fan-out: who loses events"): a
// ZIO Hub per strategy, one slow subscriber among several. Not part of the replay
// service; measure.py broadcast copies this folder into .leaklab/build/ and runs it.
ThisBuild / scalaVersion := "3.3.7"
ThisBuild / organization := "dev.leaklab"

// The replay service's versions, so the same cached jars serve both builds.
val zioVersion = "2.1.26"

lazy val root = (project in file("."))
  .settings(
    name := "broadcast-loss",
    libraryDependencies ++= Seq(
      "dev.zio" %% "zio" % zioVersion,
      "dev.zio" %% "zio-test" % zioVersion % Test,
      "dev.zio" %% "zio-test-sbt" % zioVersion % Test
    ),
    // `sbt test`: BroadcastLossSpec, a small run per claim (a sliding hub loses, a
    // resyncing subscriber does not), on the real clock.
    testFrameworks += new TestFramework("zio.test.sbt.ZTestFramework"),
    scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-Werror"),
    Compile / mainClass := Some("leaklab.broadcast.BroadcastLoss"),
    // Its own JVM, sized and collected as the replay service's, printing straight to
    // stdout (not through sbt's logger), so measure.py reads its JSON lines as they are.
    run / fork := true,
    run / javaOptions ++= Seq("-Xmx256m", "-XX:+UseG1GC"),
    run / outputStrategy := Some(StdoutOutput)
  )
