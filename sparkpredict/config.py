"""Resolves sparkpredict's settings once: explicit argument, then environment, then default."""
from __future__ import annotations

import os
import re
from pathlib import Path

#: Environment variable naming the history store when no ``store=`` is given.
STORE_ENV = "SPARKPREDICT_STORE"
#: Where the listener jar is cached (keyed by source hash and Spark version).
CACHE_ENV = "SPARKPREDICT_CACHE"

# Spark configuration keys the listener reads.
KEY_STORE = "spark.sparkpredict.store"
KEY_JOB = "spark.sparkpredict.job"
KEY_TASKS = "spark.sparkpredict.tasks"
KEY_INPUT_BYTES = "spark.sparkpredict.inputBytes"
KEY_FLUSH_STAGES = "spark.sparkpredict.flushEveryStages"
#: ``spark.sparkpredict.param.<name>=<number>``: a job parameter known before the run (iterations,
#: k, a page count) that the runtime models take as a feature next to the input size.
PARAM_PREFIX = "spark.sparkpredict.param."
LISTENER_CLASS = "io.sparkpredict.SparkPredictListener"
#: The Spark plugin that samples host counters (CPU by mode, pressure stalls, disk and network
#: bytes) on the driver's and every executor's host for the slowdown monitor.
HOST_PLUGIN_CLASS = "io.sparkpredict.HostMetricsPlugin"
KEY_HOST_SAMPLE_MS = "spark.sparkpredict.hostSampleIntervalMs"

#: ``local``, ``local[N]``, ``local[*]``, ``local[N,F]``: (N or "*" or None, F or None).
LOCAL_MASTER = re.compile(r"local(?:\[(\d+|\*)(?:\s*,\s*(\d+))?\])?")
#: ``local-cluster[N,C,M]``: N executors of C cores and M MiB.
LOCAL_CLUSTER_MASTER = re.compile(r"local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\]")


def default_store() -> str:
    """The embedded default store: ``$SPARKPREDICT_STORE`` or ``~/.sparkpredict/store``."""
    env = os.environ.get(STORE_ENV)
    if env:
        return env
    return str(Path.home() / ".sparkpredict" / "store")


def resolve_store(store: str | os.PathLike[str] | None) -> str:
    """The store path or URI to use; local paths come back absolute."""
    s = str(store) if store is not None else default_store()
    if "://" in s and not s.startswith("file://"):
        return s
    s = s.removeprefix("file://")
    return str(Path(s).expanduser().resolve())


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "sparkpredict"
