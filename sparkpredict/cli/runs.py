"""``sparkpredict runs``: export a history store's runs table to CSV or Parquet."""
from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "runs", help="export the runs table (one row per succeeded run) to CSV/Parquet",
        description="Write one row per succeeded run: run_id, job, input_bytes, executors, "
                    "executor_cores, executor_memory_mb, runtime_s (+ post-run columns for "
                    "inspection). The file is the input of `fit` and `evaluate`.")
    p.add_argument("--store", metavar="S", help="history store (default: $SPARKPREDICT_STORE)")
    p.add_argument("--out", required=True, metavar="FILE", help="runs.csv or runs.parquet (.pq)")
    p.add_argument("--job", action="append", help="only this job (repeatable)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..config import resolve_store
    from ..errors import InputError
    from ..features.runs import no_runs_error, runs_table
    from ..outputs import output_table, table_format, write_table

    output_table(args.out, "runs.csv")
    store = resolve_store(args.store)
    df = runs_table(store)
    if df.empty:  # an empty table would only fail later, in `fit`, with a misleading message
        raise no_runs_error(store)
    if args.job:
        unknown = sorted(set(args.job) - set(df["job"]))
        if unknown:
            raise InputError(f"no succeeded runs of job(s) {unknown} in the store; "
                             f"jobs: {', '.join(sorted(set(df['job']))) or '(none)'}",
                             "check the job name (spark.sparkpredict.job, default the app name)")
        df = df[df["job"].isin(args.job)]
    write_table(_whole_numbers_as_integers(df) if table_format(args.out) == "csv" else df, args.out)
    print(f"wrote {len(df)} runs of {df['job'].nunique()} job(s) to {args.out}")
    return 0


def _whole_numbers_as_integers(df: Any) -> Any:
    """``df`` with each float column whose values are all whole numbers (byte and task counts,
    epoch ms) as nullable integers, which CSV writes as ``18367893385``, not ``18367893385.0``.

    CSV only, and only for the file: ``runs_table`` keeps floats for the models, a CSV reader
    gets numbers either way (``fit`` fits the same models), and Parquet already stores typed
    doubles, which a nullable integer column would replace with pandas' NA-holding dtype."""
    import numpy as np
    import pandas as pd

    out = df.copy()
    for col in out.columns:
        s = out[col]
        if not pd.api.types.is_float_dtype(s):
            continue
        v = s.dropna().to_numpy(dtype=np.float64)
        # within +-2**53 every float is exact as an integer, and no count comes near it
        if len(v) and np.isfinite(v).all() and (v == np.round(v)).all() and (np.abs(v) < 2**53).all():
            out[col] = s.astype("Int64")
    return out
