"""HiBench-style workloads: deterministic data generators, Spark job bodies and their registry.

Each workload has a generator sized in bytes (deterministic for a seed, cached on disk), a
body that runs on a SparkSession, and a thin ``spark-submit`` script in the repository's
``jobs/`` folder. The sweep runs the bodies in-process; the scripts are the same code for
``spark-submit`` / ``sparkpredict submit``.

>>> from sparkpredict import workloads
>>> sorted(workloads.names())
['kmeans', 'logreg', 'pagerank', 'sort', 'sqljoin', 'wordcount']
"""
from __future__ import annotations

import functools
import math
import operator
import os
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError, SparkPredictError, WorkloadError, print_error
from ..units import format_bytes, parse_bytes
from . import bodies
from . import generate as gen

#: The repository's jobs/ folder, in a source checkout or an editable install.
_REPO_JOBS = Path(__file__).resolve().parents[2] / "jobs"
#: The copy setup.py ships in an installed package.
_PKG_JOBS = Path(__file__).resolve().parents[1] / "jobs"
#: The spark-submit scripts: the installed copy first. The checkout's only where there is none
#: (an editable install): beside an installed package, parents[2] is site-packages or an
#: application's folder, whose own jobs/sort.py took its place.
JOBS_DIR = _PKG_JOBS if (_PKG_JOBS / "retrain.py").is_file() else _REPO_JOBS
_MB = 1000**2


@dataclass(frozen=True)
class Workload:
    """One workload: how to make its input and how to run it."""

    name: str
    description: str
    #: Smallest input the generator makes meaningfully (at least one full chunk of records).
    min_bytes: int
    writer: Callable[[Path, int, int], None]
    body: Callable[..., dict[str, Any]]
    #: Extra parameters passed to the body (iterations ...), recorded in the run's properties.
    params: dict[str, Any]

    @property
    def script(self) -> Path:
        """The spark-submit script ``jobs/<name>.py``."""
        return JOBS_DIR / f"{self.name}.py"

    def data(self, nbytes: int | str, seed: int = 0, cache_dir: str | os.PathLike | None = None) -> Path:
        """The generated input of ``nbytes`` (bytes, or a size such as ``"64MB"``) for ``seed``
        (generated once, then cached)."""
        nbytes = parse_bytes(nbytes)
        check_size(self, nbytes)
        seed = check_seed(seed)
        return gen.ensure_data(self.name, self.writer, nbytes, seed, Path(cache_dir or default_cache()))

    def run(self, spark, data_path: Path | str, seed: int = 0) -> dict[str, Any]:
        """Run the workload's Spark body on ``data_path``; returns its result summary."""
        return self.body(spark, str(data_path), {**self.params, "seed": seed})


def _simple(chunk: gen.ChunkFn) -> Callable[[Path, int, int], None]:
    def write(folder: Path, nbytes: int, seed: int) -> None:
        gen.write_sized(folder, chunk, nbytes, seed)
    return write


def _write_sql(folder: Path, nbytes: int, seed: int) -> None:
    # The dimension table is ~5 % of the bytes, so both sides of the join grow with the input.
    n_customers = max(2000, int(nbytes * 0.05 / 26))
    cust = gen.customers_lines(n_customers)
    (folder / "customers").mkdir(parents=True, exist_ok=True)
    (folder / "customers" / "part-00000.txt").write_bytes(cust)
    orders = functools.partial(gen.orders_chunk, n_customers=n_customers)
    gen.write_sized(folder / "orders", orders, nbytes - len(cust), seed)


WORKLOADS: dict[str, Workload] = {w.name: w for w in [
    Workload("wordcount", "word count over Zipf-distributed text (HiBench micro/wordcount)",
             1 * _MB, _simple(gen.text_chunk), bodies.wordcount, {}),
    Workload("sort", "TeraSort-like total sort of 100-byte records by a 10-byte key",
             1 * _MB, _simple(gen.tera_chunk), bodies.sort, {}),
    Workload("kmeans", "MLlib k-means (k=5, 5 iterations) on 8-d Gaussian mixtures",
             1 * _MB, _simple(gen.points_chunk), bodies.kmeans, {"iterations": 5}),
    Workload("pagerank", "PageRank, 3 iterations of join + aggregate over a power-law graph",
             1 * _MB, _simple(gen.edges_chunk), bodies.pagerank, {"iterations": 3}),
    Workload("logreg", "MLlib logistic regression (10 L-BFGS iterations, 10 features)",
             1 * _MB, _simple(gen.labeled_chunk), bodies.logreg, {"iterations": 10}),
    Workload("sqljoin", "SQL shuffle join of orders with customers, then group-by aggregation",
             2 * _MB, _write_sql, bodies.sqljoin, {}),
]}


def names() -> list[str]:
    return list(WORKLOADS)


def get(name: str) -> Workload:
    """The workload called ``name``; :class:`WorkloadError` naming the known ones otherwise."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise WorkloadError(f"unknown workload {name!r}",
                            f"choose one of: {', '.join(WORKLOADS)}") from None


def check_size(workload: Workload, nbytes: int) -> None:
    if nbytes < workload.min_bytes:
        raise WorkloadError(
            f"size {format_bytes(nbytes)} is below the {workload.name} generator's minimum "
            f"of {format_bytes(workload.min_bytes)}",
            f"give sizes of at least {workload.min_bytes // _MB}MB")


def check_seed(seed: Any) -> int:
    """``seed`` as an int of 0 or more: numpy's generators refuse a negative one, but only once
    a sweep has started (``ValueError: expected non-negative integer``)."""
    try:
        value = operator.index(seed)  # an int or numpy integer; not 1.5, not "3"
    except TypeError:
        value = -1
    if value < 0 or isinstance(seed, bool):
        raise InputError(f"seed {seed!r}: the data generators take whole numbers of 0 or more",
                         "give --seed 0 or more (default 0); from Python, seed=0 or more")
    return value


def spark_settings(input_bytes: int) -> dict[str, str]:
    """The Spark settings a workload runs with on ``input_bytes`` of generated input: in a sweep
    (:func:`sparkpredict.sweep.run_conf`) and from its ``jobs/`` script alike, so that runs
    recorded under one job name by either are the same job. With Spark's defaults instead
    (200 shuffle partitions), a 4 MB wordcount ran 604 tasks (56 s) on
    ``local-cluster[2,1,1024]`` where a sweep's run ran 18."""
    # Shuffle partitions follow the input (one per generated part), not the executor count,
    # so runs at different executor counts do the same work.
    parts = max(4, math.ceil(input_bytes / gen.PART_BYTES))
    return {
        "spark.sql.shuffle.partitions": str(parts),
        "spark.default.parallelism": str(parts),
        # One generated part file per read task, whatever the executor count.
        "spark.sql.files.maxPartitionBytes": str(gen.PART_BYTES),
    }


def script_settings(input_bytes: int, submitted: Collection[str]) -> dict[str, str]:
    """What a ``jobs/`` script sets on its SparkSession: :func:`spark_settings` and the declared
    input size, each only where the submitter did not set it. ``submitted``: the keys of the
    SparkConf that ``spark-submit`` made (its ``--conf``, ``spark-defaults.conf``). The check
    must come first: a ``SparkSession.builder.config`` value replaces spark-submit's own."""
    wanted = {**spark_settings(input_bytes), "spark.sparkpredict.inputBytes": str(input_bytes)}
    return {k: v for k, v in wanted.items() if k not in submitted}


def default_cache() -> Path:
    from ..config import cache_dir

    return cache_dir() / "data"


def main(name: str, argv: list[str] | None = None) -> int:
    """Entry point of ``jobs/<name>.py``: generate (or reuse) the input, run, print the result.

    The SparkSession takes its master and the listener settings from ``spark-submit``
    (``sparkpredict submit`` adds them). The sweep's settings (:func:`spark_settings`) and
    ``spark.sparkpredict.inputBytes`` are set here where the submitter did not set them
    (:func:`script_settings`).
    """
    import sys

    # the CLI's parser: a usage error ends with a fix: line, as every other mistake does
    from ..cli import _dash_values, _Parser

    w = get(name)
    p = _Parser(prog=f"jobs/{name}.py", description=w.description)
    p.add_argument("--size", default="64MB", help="input size to generate (e.g. 64MB)")
    p.add_argument("--seed", type=int, default=0, help="data generator seed, 0 or more (default 0)")
    p.add_argument("--data", help="use this generated folder instead of the cache")
    p.add_argument("--cache",
                   help="data cache folder (default $SPARKPREDICT_CACHE/data, else ~/.cache/sparkpredict/data)")
    # "--size -5MB" would be two options to argparse ("expected one argument"): joined, the
    # size's own check says what is wrong with it
    a = p.parse_args(_dash_values([p], list(sys.argv[1:] if argv is None else argv)))
    try:  # a mistake in the arguments is one error line, before Spark starts
        nbytes = parse_bytes(a.size)
        if a.data and not Path(a.data).is_dir():
            raise WorkloadError(f"--data {a.data} is not a folder",
                                "give a folder this job generated earlier, or leave --data out")
        path = Path(a.data) if a.data else w.data(nbytes, a.seed, a.cache)
        actual = gen.data_size(path)
    except SparkPredictError as exc:
        return print_error(exc)

    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    # Before the gateway is up, SparkConf() is an empty Python dict, blind to spark-submit's
    # --conf (held by the JVM spark-submit started): the --conf would then be overridden.
    SparkContext._ensure_initialized()
    builder = SparkSession.builder.appName(name)
    submitted = {k for k, _ in SparkConf().getAll()}
    for key, value in script_settings(actual, submitted).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    try:
        result = w.run(spark, path, a.seed)
        print(f"{name}: {result}")
    finally:
        spark.stop()
    return 0


__all__ = ["WORKLOADS", "Workload", "check_seed", "check_size", "default_cache", "get", "main", "names",
           "script_settings", "spark_settings"]
