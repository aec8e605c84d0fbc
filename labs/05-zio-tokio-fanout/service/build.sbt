// Lab 05: a match-replay service on ZIO 2 streams and zio-http (Scala 3).
// Versions are pinned so a warm cache always resolves the same jars.
ThisBuild / scalaVersion := "3.3.7"
ThisBuild / organization := "dev.leaklab"

val zioVersion = "2.1.26"
val zioHttpVersion = "3.11.3"

// `stageArgs <file>` writes a java @argfile (`-cp <runtime classpath>`), so a run
// starts the service with plain `java @file leaklab.fanout.ReplayService` and never waits on sbt.
val stageArgs = inputKey[Unit]("write a java @argfile with the runtime classpath")

lazy val root = (project in file("."))
  .settings(
    name := "replay-service",
    libraryDependencies ++= Seq(
      "dev.zio" %% "zio" % zioVersion,
      "dev.zio" %% "zio-streams" % zioVersion,
      "dev.zio" %% "zio-http" % zioHttpVersion,
      "dev.zio" %% "zio-test" % zioVersion % Test,
      "dev.zio" %% "zio-test-sbt" % zioVersion % Test
    ),
    scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-Werror"),
    testFrameworks += new TestFramework("zio.test.sbt.ZTestFramework"),
    // The entry point, the class lab.toml starts: ReplayService.scala's ZIOAppDefault.
    Compile / mainClass := Some("leaklab.fanout.ReplayService"),
    // Test classes run one after another: on two cores, running them in parallel only
    // adds contention. (They run inside sbt's own JVM because `Test / fork` is false by
    // default; that is a separate setting.)
    Test / parallelExecution := false,
    stageArgs := {
      val target = complete.DefaultParsers.spaceDelimited("<file>").parsed.headOption
        .getOrElse(sys.error("usage: stageArgs <file>"))
      val cp = (Runtime / fullClasspath).value.files.map(_.getAbsolutePath)
      IO.write(file(target), "-cp " + cp.mkString(java.io.File.pathSeparator) + "\n")
    }
  )
