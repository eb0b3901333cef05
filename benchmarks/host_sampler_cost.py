"""Cost of the host plugin's sampling: the time to read /proc once, against its period.

One ``local[2]`` application with the listener and ``io.sparkpredict.HostMetricsPlugin`` at a
short period (50 ms, so that one run gives hundreds of readings), running a CPU-bound job. The
plugin counts the wall and thread CPU time of every reading in the driver's JVM (``readNanos``/``reads``);
the job's own wall time is the reference measured in the same run. Wall and CPU time of the
readings are both reported; the share of a core is the CPU time. At the default period
(1 s) the plugin's share of one core is the reading time divided by 1,000 ms.

    python benchmarks/host_sampler_cost.py [--period-ms 50] [--seconds 15] [--no-write]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_section

DEFAULT_PERIOD_MS = 1000
GOAL_SHARE = 0.001  # at most 0.1 % of one core at the default period


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--period-ms", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=15.0, help="how long the job keeps running")
    ap.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    a = ap.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from sparkpredict.capture.listener import listener_conf
    from sparkpredict.store import io

    with tempfile.TemporaryDirectory(prefix="sp-hostcost-") as tmp:
        b = (SparkSession.builder.master("local[2]").appName("host-sampler-cost")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sparkpredict.hostSampleIntervalMs", str(a.period_ms)))
        for k, v in listener_conf(store=str(Path(tmp) / "store"), job="host-cost").items():
            b = b.config(k, v)
        spark = b.getOrCreate()
        plugin = spark.sparkContext._jvm.io.sparkpredict.HostMetricsPlugin
        ns0, cpu0, n0 = plugin.readNanos(), plugin.readCpuNanos(), plugin.reads()
        t0 = time.perf_counter()
        jobs = 0
        while time.perf_counter() - t0 < a.seconds:
            spark.range(0, 4_000_000, numPartitions=4).selectExpr("sum(hash(id, id * 7))").collect()
            jobs += 1
        wall_s = time.perf_counter() - t0
        read_ms = (plugin.readNanos() - ns0) / 1e6
        cpu_ms = (plugin.readCpuNanos() - cpu0) / 1e6
        reads = plugin.reads() - n0
        spark.stop()
        rows = len(io.open(Path(tmp) / "store").read("host_samples"))
    per_read_ms, per_read_cpu_ms = read_ms / max(reads, 1), cpu_ms / max(reads, 1)
    share_default = per_read_cpu_ms / DEFAULT_PERIOD_MS
    body = "\n".join([
        "## Host sampler cost (host_sampler_cost)", "",
        (f"One `local[2]` application, listener and host plugin, sampling every {a.period_ms} ms while "
        f"a CPU-bound job repeated for {wall_s:.1f} s ({jobs} jobs); the driver's JVM timed every reading."), "",
        "| measure | value |", "|---|---|",
        f"| readings in the window | {reads} |",
        f"| wall time reading /proc, total (includes waiting for a core: the job keeps both busy) | {read_ms:.1f} ms |",
        f"| CPU time reading /proc, total | {cpu_ms:.1f} ms |",
        f"| mean wall time per reading | {per_read_ms * 1000:.0f} µs |",
        f"| **mean CPU time per reading** | **{per_read_cpu_ms * 1000:.0f} µs** |",
        f"| reference: job wall time in the same run | {wall_s * 1000:.0f} ms |",
        f"| reading CPU time / job wall time (at {a.period_ms} ms) | {cpu_ms / (wall_s * 1000):.4%} |",
        f"| share of one core at the default period ({DEFAULT_PERIOD_MS} ms) | {share_default:.4%} |",
        f"| host_samples rows written for the application | {rows} |", "",
        (f"goal at most 0.1 % of one core per executor at the default period: "
        f"**{'met' if share_default <= GOAL_SHARE else 'not met'}** ({share_default:.4%})"), "",
        ("The figure is the reading only; sending a sample to the driver is one small RPC message "
        "per period, and the listener writes the rows with its batches.")])
    print(body)
    if not a.no_write:
        write_section("host_sampler_cost", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
