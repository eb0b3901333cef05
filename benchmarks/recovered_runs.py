"""How far one run that recovered from a lost executor moves the whole-job model.

A run that lost an executor (spot capacity taken back, a JVM killed) takes longer by its
recovery: +47.9 % for the real ``local-cluster`` run of ``tests/test_listener_fetch_failed.py``.
The advice keeps such runs and warns of them (``docs/advice.md``); this measures what one of them
weighs in the fit, which has no outlier handling. For each job of ``tests/data/history`` (24 runs:
4 sizes x 1-3 executors x 2 repeats) and each configuration, a copy of its first run, 1.48x as
long and the newest of the history, is added, and the model the advice fits
(``persist.fit_job``, seed 0) is fitted again: how far the prediction moves at that run's own
size and count, and the median move at the job's other configurations.

    python benchmarks/recovered_runs.py [--no-write]
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import publish

from sparkpredict import store
from sparkpredict.features.runs import runs_table
from sparkpredict.models.persist import fit_job

HISTORY = Path(__file__).resolve().parents[1] / "tests" / "data" / "history"
JOBS = ("wordcount", "sort", "sqljoin")
INFLATION = 1.48
COLS = ["input_bytes", "executors", "executor_cores", "executor_memory_mb"]


def moves(t: pd.DataFrame) -> tuple[str, list[float], list[float]]:
    """(the clean model's name, move at the added run's own configuration, median |move| at
    the other configurations), one per configuration."""
    grid = t[COLS].drop_duplicates().reset_index(drop=True)
    base = fit_job(t)
    p0 = np.asarray(base.predict(grid), float)
    own, other = [], []
    for _, row in t.groupby(["input_bytes", "executors"]).head(1).iterrows():
        add = row.to_frame().T.assign(run_id="recovered", runtime_s=row.runtime_s * INFLATION,
                                      start_ms=t.start_ms.max() + 60_000)
        t2 = pd.concat([t, add], ignore_index=True).astype(t.dtypes.to_dict())
        p1 = np.asarray(fit_job(t2).predict(grid), float)
        at = ((grid.input_bytes == row.input_bytes) & (grid.executors == row.executors)).to_numpy()
        own.append(float(p1[at][0] / p0[at][0] - 1))
        other.append(float(np.median(np.abs(p1[~at] / p0[~at] - 1))))
    return str(base.name_), own, other


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md as it is")
    args = ap.parse_args()
    raw = store.open(HISTORY).runs()
    lines = ["## recovered_runs: one run 1.48x as long (a lost executor's recovery) added to a job's runs",
             "", (f"`tests/data/history`, each configuration's first run copied in turn at {INFLATION}x its "
                  "runtime; the advice's whole-job model fitted again."), "",
             "| job | model | move at the run's configuration: median (range) | at the others: median (max) |",
             "|---|---|---|---|"]
    for job in JOBS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            name, own, other = moves(runs_table(raw[raw.job == job]))
        lines.append(f"| {job} | {name.replace('|', ' + ')} | {np.median(own):+.1%} ({min(own):+.1%} to {max(own):+.1%}) | "
                     f"{np.median(other):.1%} ({max(other):.1%}) |")
    publish("recovered_runs", lines, write=not args.no_write)


if __name__ == "__main__":
    main()
