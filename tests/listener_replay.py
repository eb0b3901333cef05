"""Feed event logs to the real listener through Spark's own ReplayListenerBus, in a JVM of its
own with no SparkContext (a second listener in the tests' JVM would take over its one current
listener). Run as a script: ``python listener_replay.py JAR JOBS_JSON``, JOBS_JSON a list of
``[log, store, properties]``; each log's application is recorded into its store by a listener
built from that application's own properties, as it would have been on its cluster.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def replay(jar, jobs: list) -> list[dict]:
    """Run this script on ``jobs`` (``[log, store, properties]`` each) in a process of its own;
    its one result per log (``{log, replayed, error}``), after checking that it exited cleanly."""
    done = subprocess.run([sys.executable, str(Path(__file__)), str(jar), json.dumps(jobs)],
                          check=False, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def main(jar: str, jobs: list) -> None:
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway(SparkConf().set("spark.ui.enabled", "false")
                             .set("spark.driver.extraClassPath", jar))
    jvm = gateway.jvm
    try:
        for log, store, properties in jobs:
            conf = jvm.org.apache.spark.SparkConf(False)
            for k, v in properties.items():
                # what the run declared (its job, input size, parameters) as the ingest reads it;
                # not where its listener wrote, nor that listener's tuning
                declared = k in ("spark.sparkpredict.job", "spark.sparkpredict.inputBytes") or \
                    k.startswith("spark.sparkpredict.param.")
                if (declared or not k.startswith("spark.sparkpredict.")) and k != "spark.extraListeners":
                    conf.set(k, v)
            conf.set("spark.sparkpredict.store", store)
            bus = jvm.org.apache.spark.scheduler.ReplayListenerBus()
            bus.addListener(jvm.io.sparkpredict.SparkPredictListener(conf))
            stream = jvm.java.io.FileInputStream(log)
            if log.endswith(".zstd"):
                stream = jvm.org.apache.spark.io.ZStdCompressionCodec(conf).compressedInputStream(stream)
            try:
                replayed = bus.replay(stream, log, True, jvm.org.apache.spark.scheduler.ReplayListenerBus.SELECT_ALL_FILTER())
            finally:
                stream.close()
            error = jvm.io.sparkpredict.SparkPredictListener.lastError()
            print(json.dumps({"log": log, "replayed": bool(replayed), "error": error}), flush=True)
    finally:
        gateway.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], json.loads(sys.argv[2]))
