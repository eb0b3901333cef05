"""Overhead of the sparkpredict listener on one job of ~10,000 tasks.

Three ways, alternated in one run inside one JVM (the listener jar is on the classpath from the
start; each application is a fresh SparkContext, ~0.2 s to restart):

1. ``none``      no listener, no event log (the reference);
2. ``eventlog``  Spark's own event log (spark.eventLog.enabled, Spark 4 defaults: rolling, zstd);
3. ``listener``  the sparkpredict listener, task rows on (spark.sparkpredict.tasks=true), and
   its host plugin sampling /proc every second, as ``listener_conf`` sets them up.

Measured per application: the job (``spark.range(...).count()`` over N partitions, JVM-only
tasks so that Python workers do not blur the figure) plus ``stop()``, which drains the listener
bus and includes the listener's and the event log's final writes. Order rotates every round.

    python benchmarks/listener_overhead.py [--tasks 10000] [--rounds 5] [--master local[2]]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import write_section

MODES = ("none", "eventlog", "listener")


def _conf(mode: str, work: Path, rnd: int) -> dict[str, str]:
    from sparkpredict.config import (
        HOST_PLUGIN_CLASS,
        KEY_STORE,
        KEY_TASKS,
        LISTENER_CLASS,
    )

    if mode == "eventlog":
        d = work / "eventlog"
        d.mkdir(exist_ok=True)
        return {"spark.eventLog.enabled": "true", "spark.eventLog.dir": d.as_uri()}
    if mode == "listener":
        return {"spark.extraListeners": LISTENER_CLASS, "spark.plugins": HOST_PLUGIN_CLASS,
                KEY_STORE: (work / "store").as_uri(), KEY_TASKS: "true", "spark.sparkpredict.job": "overhead"}
    return {}


def run_once(mode: str, tasks: int, master: str, work: Path, rnd: int,
             jar: str) -> tuple[float, float, float, float, float, int]:
    from pyspark.sql import SparkSession

    b = (SparkSession.builder.master(master).appName(f"overhead-{mode}-{rnd}")
         .config("spark.jars", jar).config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "2g")
         .config("spark.local.dir", str(work / "local")))
    for k, v in _conf(mode, work, rnd).items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    jvm_listener = spark.sparkContext._jvm.io.sparkpredict.SparkPredictListener
    jvm_plugin = spark.sparkContext._jvm.io.sparkpredict.HostMetricsPlugin
    busy0, write0 = jvm_listener.busyNanos(), jvm_listener.writeNanos()
    cpu0, reads0 = jvm_plugin.readCpuNanos(), jvm_plugin.reads()
    t0 = time.perf_counter()
    n = spark.range(0, tasks * 100, 1, numPartitions=tasks).selectExpr("id % 7 as k").filter("k >= 0").count()
    t1 = time.perf_counter()
    spark.stop()
    t2 = time.perf_counter()
    busy_s = (jvm_listener.busyNanos() - busy0) / 1e9  # the listener's own time in its callbacks
    write_s = (jvm_listener.writeNanos() - write0) / 1e9  # its writer thread's time writing Parquet
    plugin_cpu_s = (jvm_plugin.readCpuNanos() - cpu0) / 1e9  # the host plugin's CPU time reading /proc
    assert n == tasks * 100
    return t1 - t0, t2 - t0, busy_s, write_s, plugin_cpu_s, int(jvm_plugin.reads() - reads0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md alone")
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from sparkpredict.capture.listener import build_listener

    jar = str(build_listener())
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="sp-overhead-") as tmp:
        work = Path(tmp)
        (work / "local").mkdir()
        print("warm-up (JVM start, JIT, class loading of all three ways)...", flush=True)
        for mode in MODES:
            run_once(mode, min(args.tasks, 1000), args.master, work, -1, jar)
        times: dict[str, list[float]] = {m: [] for m in MODES}
        job_times: dict[str, list[float]] = {m: [] for m in MODES}
        busy: list[float] = []
        written: list[float] = []
        plugin: list[float] = []
        readings = 0
        for rnd in range(args.rounds):
            order = MODES[rnd % 3:] + MODES[:rnd % 3]
            for mode in order:
                job_s, total_s, busy_s, write_s, plugin_s, reads = run_once(mode, args.tasks, args.master,
                                                                           work, rnd, jar)
                if mode == "listener":
                    busy.append(busy_s / total_s * 100)
                    written.append(write_s / total_s * 100)
                    plugin.append(plugin_s / total_s * 100)
                    readings += reads
                times[mode].append(total_s)
                job_times[mode].append(job_s)
                print(f"round {rnd} {mode:<9} job {job_s:6.2f} s  job+stop {total_s:6.2f} s"
                      f"  listener callbacks {busy_s:6.3f} s, writer {write_s:6.3f} s", flush=True)
        from sparkpredict import store as store_mod

        st = store_mod.open(work / "store")
        runs = st.runs()[lambda r: r["app_name"].str.match(r"overhead-listener-\d")]
        rows = int(st.tasks()["run_id"].isin(runs["run_id"]).sum())
        el_bytes = sum(p.stat().st_size for p in (work / "eventlog").rglob("*") if p.is_file())
        st_bytes = sum(p.stat().st_size for p in (work / "store").rglob("*") if p.is_file())
    load_after = os.getloadavg()[0]
    med = {m: statistics.median(v) for m, v in times.items()}
    jmed = {m: statistics.median(v) for m, v in job_times.items()}
    # paired per round: each round ran all three modes back to back
    paired = {m: statistics.median([(a / b - 1) * 100 for a, b in zip(times[m], times["none"])])
              for m in ("eventlog", "listener")}
    over = {m: (med[m] / med["none"] - 1) * 100 for m in ("eventlog", "listener")}
    # the two estimates of one comparison: when they disagree, neither decides it
    el_by = {"paired": paired["listener"] <= max(paired["eventlog"], 0.0) + 1e-9,
             "medians": over["listener"] <= max(over["eventlog"], 0.0) + 1e-9}
    ok_el = el_by["paired"] and el_by["medians"]
    busy_med, write_med = statistics.median(busy), statistics.median(written)
    # When the event log (which surely costs something) comes out below the reference by more
    # than the effect we look for, the machine's noise is larger than the goal: say so.
    noisy = paired["eventlog"] < -2.0 or over["eventlog"] < -2.0

    def verdict(ok: bool, split: bool = False) -> str:
        if noisy:
            return "inconclusive: noise > effect on this shared machine"
        if split:
            return "inconclusive: the paired and the medians' figures disagree"
        return "met" if ok else "not met"
    # The end-to-end ratio cannot resolve 2 % on a shared machine; the listener's own time (its
    # callbacks on Spark's listener-bus thread, and its writer thread) bounds what it can add.
    plugin_med = statistics.median(plugin)
    own = busy_med + write_med + plugin_med
    ok_2 = paired["listener"] <= 2.0 or own <= 2.0
    if own <= 2.0 < paired["listener"]:
        why_2 = (f" = {own:.2f} %, within 2 %: met by the listener's own time, not by the end-to-end figure,"
                 " which here cannot resolve 2 %)")
    elif own > 2.0:
        why_2 = (f" = {own:.2f} %, above 2 %: the verdict rests on the end-to-end figure alone, the bound"
                 " does not exclude more)")
    else:
        why_2 = f" = {own:.2f} %, within 2 % too)"
    lines = [
        "## Listener overhead",
        "",
        (f"One job of {args.tasks:,} tasks (`spark.range(...).count()`, `{args.master}`), job + `stop()`"
        f" wall time, {args.rounds} rounds, the three ways alternated (order rotated each round) in one JVM."),
        (f"1-minute load average {load_before:.1f} before the warm-up and {load_after:.1f} after the last round"
        f" ({os.cpu_count()} CPUs). Single figures are noisy; the paired per-round ratios are the better estimate."),
        "",
        "| way | median job+stop (s) | median job (s) | overhead vs none (medians) | overhead vs none (paired median) |",
        "|---|---|---|---|---|",
    ]
    for m in MODES:
        o = "-" if m == "none" else f"{over[m]:+.1f} %"
        p = "-" if m == "none" else f"{paired[m]:+.1f} %"
        lines.append(f"| {m} | {med[m]:.2f} | {jmed[m]:.2f} | {o} | {p} |")
    lines += [
        "",
        (f"Recorded: {len(runs)} runs, {rows:,} task rows, store {st_bytes / 2**20:.1f} MiB; "
        f"event logs {el_bytes / 2**20:.1f} MiB."),
        "",
        (f"Time the listener spent in its own callbacks (every task end; they hand rows over and write nothing),"
        f" as a share of the job+stop wall time: median **{busy_med:.2f} %** ({', '.join(f'{b:.2f}' for b in busy)}"
        f" %); its writer thread writing the Parquet batches: median **{write_med:.2f} %**"
        f" ({', '.join(f'{b:.2f}' for b in written)} %). The callbacks run on Spark's asynchronous listener-bus"
        " thread and the writes on a thread of their own, so together they bound the listener's cost; the"
        " end-to-end ratios above are within this machine's noise when the event log's overhead comes out"
        " negative."),
        "",
        (f"The host plugin's CPU time reading /proc ({readings:,} readings; in local mode only the driver samples,"
        f" every second), as a share of one core over the job+stop wall time: median **{plugin_med:.3f} %**"
        f" ({', '.join(f'{b:.3f}' for b in plugin)} %)."),
        "",
        (f"- goal overhead ≤ event log's: **{verdict(ok_el, el_by['paired'] != el_by['medians'])}** (listener"
        f" {paired['listener']:+.1f} % vs event log {paired['eventlog']:+.1f} %, paired medians; by the medians"
        f" {over['listener']:+.1f} % vs {over['eventlog']:+.1f} %)"),
        (f"- goal overhead ≤ 2 % of wall time: **{verdict(ok_2)}** (end-to-end {paired['listener']:+.1f} %;"
        f" own callback time {busy_med:.2f} % + writer {write_med:.2f} % + host plugin {plugin_med:.3f} %"
        + why_2),
    ]
    body = "\n".join(lines)
    print(body)
    if not args.no_write:
        write_section("listener_overhead", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
