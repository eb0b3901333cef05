"""``sparkpredict predict MODEL_DIR QUERY --out PRED.csv``: runtimes with 90 % intervals."""
from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "predict", help="predict runtimes for a query table with saved models",
        description="QUERY is CSV/Parquet with job, input_bytes (bytes, or a size such as 50GB "
                    "or 1.5TiB), executors (a whole number; executor_cores, executor_memory_mb "
                    "and extra features optional). Writes the query's rows in order with "
                    "predicted_runtime_s, lower_s, upper_s, model and extrapolation to a .csv or "
                    ".parquet file.")
    p.add_argument("model_dir", metavar="MODEL_DIR")
    p.add_argument("query", metavar="QUERY")
    p.add_argument("--out", required=True, metavar="PRED.csv", help="PRED.csv or PRED.parquet")
    p.add_argument("--confidence", type=float, default=0.9)
    p.set_defaults(func=run)


def predict_table(models: dict, query: Any, confidence: float = 0.9) -> Any:
    """Query rows in order + predicted_runtime_s, lower_s, upper_s, model, extrapolation."""
    import numpy as np

    from ..errors import InputError
    from ..features.runs import check_job_column

    missing = [c for c in ("job", "input_bytes", "executors") if c not in query.columns]
    if missing:
        raise InputError(f"query lacks column(s) {', '.join(missing)}",
                         "give job, input_bytes and executors for every row")
    check_job_column(query, "query")
    out = _numeric(query)
    n = len(out)
    cols = {k: np.full(n, np.nan) for k in ("predicted_runtime_s", "lower_s", "upper_s", "extrapolation")}
    names = np.empty(n, dtype=object)
    jobs = out["job"].astype(str).to_numpy()
    for job in sorted(set(jobs)):
        idx = np.flatnonzero(jobs == job)
        m = models[job]
        X = {c: out[c].to_numpy()[idx] for c in out.columns if c != "job" and out[c].dtype.kind in "iuf"}
        iv = m.predict_interval(X, confidence=confidence)
        for k in ("predicted_runtime_s", "lower_s", "upper_s"):
            cols[k][idx] = iv[k]
        cols["extrapolation"][idx] = m.extrapolation(X)["max"]
        names[idx] = m.name_
    for k, v in cols.items():
        out[k] = v
    out["model"] = names
    return out


def _numeric(query: Any) -> Any:
    """The query with input_bytes read as sizes (``50MB`` as well as bytes) and the executor
    columns as numbers; a value that is neither is an error naming its row."""
    import pandas as pd

    from ..errors import InputError
    from ..units import parse_bytes

    out = query.copy()
    for col in ("input_bytes", "executors", "executor_cores", "executor_memory_mb"):
        if col not in out.columns or out[col].dtype.kind in "iuf":
            continue
        values = []
        for row, v in enumerate(out[col].tolist(), start=1):
            try:
                values.append(float(parse_bytes(v)) if col == "input_bytes" else float(v))
            except (InputError, TypeError, ValueError) as exc:
                what = "a size" if col == "input_bytes" else "a number"
                raise InputError(f"query row {row} below the header: {col} {v!r} is not {what}",
                                 "write sizes as bytes or with a unit (50MB, 1.5TiB) and counts as "
                                 "whole numbers") from exc
        whole = all(float(v).is_integer() for v in values)  # bytes and counts stay integers
        out[col] = pd.Series(values, index=out.index, dtype="int64" if whole else float)
    _check_counts(out)
    return out


def _check_counts(query: Any) -> None:
    """Refuse executor counts that no cluster can run (2.5 executors, 0 cores): the models would
    answer them, by interpolating, with a runtime nobody can get."""
    import math

    from ..errors import InputError

    for col, required in (("executors", True), ("executor_cores", False)):
        if col not in query.columns:
            continue
        for row, v in enumerate(query[col].tolist(), start=1):
            if not required and math.isnan(v):  # not given: the model's default
                continue
            if not (math.isfinite(v) and v >= 1 and float(v).is_integer()):
                raise InputError(f"query row {row} below the header: {col} {v:g} is not a whole number "
                                 "of at least 1",
                                 "write sizes as bytes or with a unit (50MB, 1.5TiB) and counts as "
                                 "whole numbers")


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..errors import InputError
    from ..features.runs import check_job_column, read_csv_keeping_jobs
    from ..models.persist import load_models
    from ..outputs import output_table, write_table

    output_table(args.out, "predictions.csv")
    path = args.query
    try:
        query = pd.read_parquet(path) if path.endswith((".parquet", ".pq")) else read_csv_keeping_jobs(path)
    except FileNotFoundError as exc:
        raise InputError(f"query file {path!r} not found", "give a CSV/Parquet with job, input_bytes, executors") from exc
    except Exception as exc:
        raise InputError(f"cannot read query {path!r}: {exc}", "give a CSV or Parquet file") from exc
    if "job" not in query.columns:
        raise InputError(f"query {path!r} lacks column job", "give job, input_bytes and executors for every row")
    check_job_column(query, "query")  # before the models are looked up by job
    models = load_models(args.model_dir, jobs=sorted(set(query["job"].astype(str))))
    out = predict_table(models, query, args.confidence)
    write_table(out, args.out)
    print(f"wrote {len(out)} predictions to {args.out}")
    return 0
