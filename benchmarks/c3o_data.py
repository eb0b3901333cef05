"""Loads ../shared/data/c3o as runs tables (the data may not be copied into this repository)."""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

C3O_DIR = Path(os.environ.get("SPARKPREDICT_C3O", Path(__file__).resolve().parents[1].parent / "shared" / "data" / "c3o"))
JOBS = ("grep", "kmeans", "pagerank", "sgd", "sort")
#: Job parameters per C3O job (they stay fixed for one recurring job; size-defining ones vary S).
PARAMS = {
    "grep": ["line_length", "lines", "p_occurrence"],
    "kmeans": ["features", "observations", "k"],
    "pagerank": ["pages", "links", "convergence_criterion"],
    "sgd": ["features", "observations", "iterations"],
    "sort": ["line_length", "lines"],
}


def load_c3o(job: str | None = None) -> pd.DataFrame:
    """One row per run, in runs-table columns, plus ``machine_type`` and the job's parameters.

    ``executors`` = worker nodes (one executor per node in C3O), ``executor_cores`` = slots per
    node, ``executor_memory_mb`` = memory per node (the ``memory`` column is the cluster's: e.g.
    c4.2xlarge 30000 at 2 nodes, 180000 at 12; it was taken as each executor's before stop 35),
    ``input_bytes`` = data_size_MB * 2**20.
    """
    if not C3O_DIR.is_dir():
        raise FileNotFoundError(f"C3O data not found at {C3O_DIR}; set SPARKPREDICT_C3O")
    frames = []
    for name in ([job] if job else JOBS):
        d = pd.read_csv(C3O_DIR / f"{name}.tsv", sep="\t")
        out = pd.DataFrame({
            "job": name,
            "input_bytes": (d["data_size_MB"] * 2**20).astype("int64"),
            "executors": d["instance_count"].astype(int),
            "executor_cores": (d["slots"] // d["instance_count"]).astype(int),
            "executor_memory_mb": (d["memory"] // d["instance_count"]).astype("int64"),
            "runtime_s": d["gross_runtime"].astype(float),
            "machine_type": d["machine_type"],
        })
        for p in PARAMS[name]:
            out[p] = d[p]
        frames.append(out)
    return pd.concat(frames, ignore_index=True)
