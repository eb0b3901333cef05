"""Make the slowdown monitor's labelled dataset: real Spark runs, clean and under bubbles.

Each run is its own Spark application recorded by the sparkpredict listener into ``--store``;
its interference is recorded as the Spark property ``spark.sparkpredict.interference``
(``none`` or ``<kind>:<intensity>``), so the label travels with the run in ``properties_json``.
The order of conditions is shuffled within each round so that slow drifts of the machine's
background load spread over all conditions. The 1-minute load average before and after each run
goes to ``runs.csv`` next to the store, because "clean" runs on a shared machine are not clean.

    python benchmarks/make_interference_dataset.py --store sparkpredict/data/interference/store \\
        --workloads wordcount:24MB,sort:24MB,sqljoin:24MB --rounds 2 --clean 4 \\
        --master 'local-cluster[2,1,1024]'
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import logging
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "sparkpredict" / "data" / "interference"
#: Settings of every run (the same for clean and interfered runs of a workload).
BASE_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.default.parallelism": "8",
    "spark.sql.files.maxPartitionBytes": str(4 << 20),
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.memory": "1g",
    "spark.executor.memory": "1g",
    # With local-cluster, start the job only once every executor has registered: otherwise the
    # first stages' durations hold the executors' launch (seconds, and different every run).
    # Standalone waits for spark.cores.max x the ratio; without cores.max it expects 0 cores.
    "spark.cores.max": "2",
    "spark.scheduler.minRegisteredResourcesRatio": "1.0",
    "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
    # host counters 4 times a second: stages here last 1-5 s
    "spark.sparkpredict.hostSampleIntervalMs": "250",
}
log = logging.getLogger("make_interference_dataset")


def loadavg() -> float:
    return os.getloadavg()[0]


def conditions(kinds: list[str], intensities: list[int], clean: int) -> list[tuple[str, int]]:
    return [("none", 0)] * clean + [(k, i) for k in kinds for i in intensities]


def spark_session(store: Path, job: str, label: str, master: str, local_dir: str, extra: dict | None = None):
    """A new application with the listener attached, labelled with its interference."""
    from pyspark.sql import SparkSession

    from sparkpredict.capture.listener import listener_conf
    from sparkpredict.monitor import LABEL_KEY

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    b = SparkSession.builder.master(master).appName(job)
    conf = {**BASE_CONF, "spark.local.dir": local_dir, **listener_conf(store=str(store), job=job),
            LABEL_KEY: label, **(extra or {})}
    for k, v in conf.items():
        b = b.config(k, v)
    return b.getOrCreate()


def bubble_cpus(kind: str, spark_cpus: set[int] | None, neighbour_cpus: set[int] | None):
    """Where a bubble runs: a ``cpu`` bubble time-shares Spark's cores, the others are neighbours."""
    if spark_cpus is None:
        return None
    return spark_cpus if kind == "cpu" else neighbour_cpus


@contextlib.contextmanager
def emulated_nic(rate: str | None):
    """Shape loopback to ``rate`` (``tc`` token bucket) while the recording runs, and restore it.

    On one machine, executors fetch shuffle blocks over loopback at memory speed, so a network
    neighbour cannot slow them; a rate-limited loopback stands in for a NIC that the shuffle
    and the neighbour share. Clean runs see the same link. Needs root and ``tc``; refuses to
    replace shaping that someone else set up.
    """
    if not rate:
        yield
        return
    show = subprocess.run(["tc", "qdisc", "show", "dev", "lo"], capture_output=True, text=True, check=True)
    if not show.stdout.startswith("qdisc noqueue"):
        raise SystemExit(f"loopback already has shaping ({show.stdout.strip()}); not replacing it")
    # burst above loopback's 64 KiB MTU, or the biggest packets never pass; a short queue (10 ms)
    # so that the neighbour takes bandwidth without adding much queueing delay to Spark's RPCs
    # (this kernel has no fair-queueing qdisc to put under the bucket)
    subprocess.run(["tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate", rate, "burst", "256kb",
                    "latency", "10ms"], check=True)
    log.info("loopback shaped to %s", rate)
    try:
        yield
    finally:
        subprocess.run(["tc", "qdisc", "del", "dev", "lo", "root"], check=False)
        log.info("loopback shaping removed")


BLKIO_WRITE_BPS = Path("/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device")


@contextlib.contextmanager
def emulated_disk(rate_bytes: int | None, path: str):
    """Throttle writes to the disk holding ``path`` (cgroup v1 blkio, machine-wide) and restore.

    This machine's disk absorbs an fsync-ing neighbour without Spark noticing (1.5 GB/s); a
    throttled device stands in for the slower disks of cloud hosts, where a neighbour's writes
    delay Spark's synced shuffle files. Needs root and cgroup v1 blkio; refuses to replace a
    throttle that someone else set.
    """
    if not rate_bytes:
        yield
        return
    if not BLKIO_WRITE_BPS.exists():
        raise SystemExit(f"{BLKIO_WRITE_BPS} not found: --disk-write-rate needs cgroup v1 blkio")
    if BLKIO_WRITE_BPS.read_text().strip():
        raise SystemExit(f"a write throttle is already set ({BLKIO_WRITE_BPS.read_text().strip()}); "
                         "not replacing it")
    dev = os.stat(path).st_dev
    node = f"{os.major(dev)}:{os.minor(dev)}"
    sys_dev = Path(f"/sys/dev/block/{node}")
    if (sys_dev / "partition").exists():  # the throttle belongs to the whole disk
        node = (sys_dev.resolve().parent / "dev").read_text().strip()
    BLKIO_WRITE_BPS.write_text(f"{node} {int(rate_bytes)}")
    log.info("writes to block device %s throttled to %d bytes/s", node, rate_bytes)
    try:
        yield
    finally:
        BLKIO_WRITE_BPS.write_text(f"{node} 0")
        log.info("write throttle removed")


def run_one(store: Path, workload: str, size: str, kind: str, intensity: int, master: str,
            local_dir: str, seed: int = 0, session=spark_session,
            spark_cpus: set[int] | None = None, neighbour_cpus: set[int] | None = None,
            neighbour_nice: int = 0, extra_conf: dict | None = None,
            network_rate: float | None = None) -> dict:
    """One application of ``workload`` under the bubble ``kind:intensity`` (or none)."""
    from sparkpredict import workloads
    from sparkpredict.bubbles import Bubble
    from sparkpredict.units import parse_bytes

    w = workloads.get(workload)
    data = w.data(parse_bytes(size), seed)
    label = "none" if kind == "none" else f"{kind}:{intensity}"
    before = loadavg()
    t0 = time.time()
    spark = session(store, workload, label, master, local_dir,
                    {"spark.sparkpredict.inputBytes": str(parse_bytes(size)), **(extra_conf or {})})
    run_id = spark.sparkContext.applicationId
    try:
        if kind == "none":
            w.run(spark, data, seed)
        else:
            with Bubble(kind, intensity, max_s=600, workdir=local_dir,
                        cpus=bubble_cpus(kind, spark_cpus, neighbour_cpus),
                        nice=0 if kind == "cpu" else neighbour_nice,
                        rate_bytes=network_rate if kind == "network" else None):
                w.run(spark, data, seed)
    finally:
        spark.stop()
    return {"run_id": run_id, "workload": workload, "size": size, "label": label, "kind": kind,
            "intensity": intensity, "loadavg_1m_before": round(before, 2),
            "loadavg_1m_after": round(loadavg(), 2), "wall_s": round(time.time() - t0, 2),
            "started_utc": datetime.fromtimestamp(t0, timezone.utc).strftime("%H:%M:%S")}


def compact(store_path: Path) -> None:
    """Rewrite the store as one batch (the listener writes one per flush: many small files)."""
    import shutil

    from sparkpredict.store import io, schema

    src = io.open(store_path)
    tables = {t: src.read(t, form="arrow") for t in schema.TABLES}
    tmp = store_path.with_name(store_path.name + ".compacting")
    shutil.rmtree(tmp, ignore_errors=True)
    dst = io.open(tmp, create=True)
    dst.append(tables, batch_id=io.new_batch_id("interference-dataset"))
    for t, table in tables.items():  # never swap in a store that lost rows
        if not io.open(tmp).read(t, form="arrow").equals(table):
            raise RuntimeError(f"compacted {t} differs from the original; kept {store_path}")
    old = store_path.with_name(store_path.name + ".old")
    store_path.rename(old)
    tmp.rename(store_path)
    shutil.rmtree(old)


def main(argv: list[str] | None = None, session=spark_session) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--store", default=str(DEFAULT_OUT / "store"))
    p.add_argument("--manifest", help="CSV of runs with load averages (default: STORE/../runs.csv)")
    p.add_argument("--workloads", default="wordcount:24MB,sort:24MB,sqljoin:24MB")
    p.add_argument("--kinds", default="cpu,memory,disk,network")
    p.add_argument("--intensities", default="1,2")
    p.add_argument("--clean", type=int, default=4, help="clean runs per workload and round")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--budget-s", type=float, default=2100, help="stop starting runs after this")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-compact", action="store_true", help="keep the listener's many small files")
    p.add_argument("--spark-cpus", help="pin this process, and so the driver and executor JVMs it "
                   "starts, to these CPUs (e.g. 0); the cpu bubble shares them")
    p.add_argument("--neighbour-cpus", help="pin the memory, disk and network bubbles to these CPUs "
                   "(e.g. 1): neighbours on their own cores")
    p.add_argument("--neighbour-nice", type=int, default=0, metavar="N",
                   help="niceness of the memory, disk and network bubbles (19: they run on the "
                        "cycles Spark leaves idle and contend for their own resource, not its cores)")
    p.add_argument("--nic", metavar="RATE", help="shape loopback to RATE (tc, e.g. 20mbit) for the "
                   "whole recording: an emulated NIC that shuffle and the network bubble share")
    p.add_argument("--disk-write-rate", metavar="SIZE", help="throttle writes to the disk of the "
                   "runs' spark.local.dir to SIZE per second (cgroup blkio, e.g. 20MB) for the "
                   "whole recording: an emulated slow disk")
    p.add_argument("--network-rate", metavar="SIZE", help="pace each network bubble worker to SIZE "
                   "per second (e.g. 2MB); default: as fast as it can")
    p.add_argument("--shuffle-sync", action="store_true", help="spark.shuffle.sync=true on every "
                   "run: shuffle files reach the disk the disk bubble writes to")
    a = p.parse_args(argv)
    spark_cpus = {int(c) for c in a.spark_cpus.split(",")} if a.spark_cpus else None
    neighbour_cpus = {int(c) for c in a.neighbour_cpus.split(",")} if a.neighbour_cpus else None
    if (spark_cpus is None) != (neighbour_cpus is None):
        p.error("give --spark-cpus and --neighbour-cpus together")
    if spark_cpus is not None:
        os.sched_setaffinity(0, spark_cpus)  # inherited by the JVMs this process starts
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    store = Path(a.store)
    manifest = Path(a.manifest) if a.manifest else store.parent / "runs.csv"
    wls = [tuple(x.split(":")) for x in a.workloads.split(",")]
    conds = conditions(a.kinds.split(","), [int(i) for i in a.intensities.split(",")], a.clean)
    rng = random.Random(a.seed)
    extra_conf = {"spark.shuffle.sync": "true"} if a.shuffle_sync else {}
    # a SIGTERM (timeout, kill) must still run the finally blocks that remove the shaping
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    from sparkpredict.units import parse_bytes

    rate = parse_bytes(a.disk_write_rate) if a.disk_write_rate else None
    with emulated_nic(a.nic), emulated_disk(rate, tempfile.gettempdir()):
        _record(a, store, manifest, wls, conds, rng, extra_conf, spark_cpus, neighbour_cpus, session)
    if not a.no_compact and store.exists():
        compact(store)
    return 0


def _record(a, store, manifest, wls, conds, rng, extra_conf, spark_cpus, neighbour_cpus, session) -> None:
    from sparkpredict.units import parse_bytes

    local_dir = tempfile.mkdtemp(prefix="sparkpredict-interference-")
    # Warm-up (recorded into a throwaway store): the JVM's first application is slower.
    with tempfile.TemporaryDirectory() as warm:
        for name, size in wls:
            run_one(Path(warm), name, size, "none", 0, a.master, local_dir, session=session,
                    extra_conf=extra_conf)
    t_start = time.time()
    fields = ["run_id", "workload", "size", "label", "kind", "intensity", "loadavg_1m_before",
              "loadavg_1m_after", "wall_s", "started_utc"]
    new = not manifest.exists()
    with open(manifest, "a", newline="") as f:
        out = csv.DictWriter(f, fieldnames=fields)
        if new:
            out.writeheader()
        for r in range(a.rounds):
            plan = [(n, s, k, i) for n, s in wls for k, i in conds]
            rng.shuffle(plan)
            for j, (name, size, kind, inten) in enumerate(plan):
                if time.time() - t_start > a.budget_s:
                    log.warning("budget of %.0f s spent; stopping before run %d of round %d",
                                a.budget_s, j + 1, r + 1)
                    break
                row = run_one(store, name, size, kind, inten, a.master, local_dir, session=session,
                              spark_cpus=spark_cpus, neighbour_cpus=neighbour_cpus,
                              neighbour_nice=a.neighbour_nice, extra_conf=extra_conf,
                              network_rate=parse_bytes(a.network_rate) if a.network_rate else None)
                out.writerow(row)
                f.flush()
                log.info("round %d run %d/%d %s %s: %.1f s (load %.2f -> %.2f)", r + 1, j + 1,
                         len(plan), name, row["label"], row["wall_s"], row["loadavg_1m_before"],
                         row["loadavg_1m_after"])
    import shutil

    shutil.rmtree(local_dir, ignore_errors=True)  # the runs' spark.local.dir


if __name__ == "__main__":
    sys.exit(main())
