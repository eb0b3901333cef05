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
    p.add_argument("--store", metavar="S", help="history store (default: spark.sparkpredict.store of spark-defaults.conf, else $SPARKPREDICT_STORE, else ~/.sparkpredict/store)")
    p.add_argument("--out", required=True, metavar="FILE", help="runs.csv or runs.parquet (.pq)")
    p.add_argument("--job", action="append", help="only this job (repeatable)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..config import resolve_store
    from ..errors import InputError
    from ..features.runs import no_runs_error, runs_table, with_integer_columns
    from ..fitting import no_succeeded_run
    from ..outputs import output_table, table_format, write_table
    from ..store import io as store_io
    from ..units import plural

    output_table(args.out, "runs.csv")
    store = resolve_store(args.store)
    raw = store_io.open(store).runs()
    df = runs_table(raw)
    if args.job:
        unknown = sorted(set(args.job) - set(df["job"]))
        # a job the store holds without a succeeded run: say what its runs are, not "no such job"
        held = [j for j in unknown if (raw["job"] == j).any()]
        if held:
            what, fix = no_succeeded_run(raw[raw["job"].isin(held)])
            names = ", ".join(map(repr, held))
            raise InputError(f"job{'s' if len(held) > 1 else ''} {names} {'have' if len(held) > 1 else 'has'} "
                             f"no succeeded runs in the store: {what}", fix)
        if unknown:
            raise InputError(f"no job(s) {unknown} in the store; "
                             f"jobs: {', '.join(sorted(set(df['job']))) or '(none)'}",
                             "check the job name (spark.sparkpredict.job or `ingest --job`, default the app name)")
        df = df[df["job"].isin(args.job)]
    if df.empty:  # an empty table would only fail later, in `fit`, with a misleading message
        raise no_runs_error(store, raw)
    # integer columns stay integers in the file (Parquet: the store's types, nulls for missing
    # values); CSV, untyped, also writes other whole-valued columns without ".0"
    write_table(with_integer_columns(df, whole_valued=table_format(args.out) == "csv"), args.out)
    mine = raw if not args.job else raw[raw["job"].isin(args.job)]
    left = int((mine["status"] != "succeeded").sum())
    # a table of succeeded runs only, as the models read them: say what it leaves out
    out = f" ({plural(left, 'run')} not succeeded left out)" if left else ""
    print(f"wrote {plural(len(df), 'run')} of {plural(df['job'].nunique(), 'job')} to {args.out}{out}")
    return 0

