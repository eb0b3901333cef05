"""``sparkpredict predict MODEL_DIR QUERY --out PRED.csv``: runtimes with 90 % intervals."""
from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "predict", help="predict runtimes for a query table with saved models",
        description="QUERY is CSV/Parquet with job, input_bytes (bytes, or a size such as 50GB "
                    "or 1.5TiB), executors (a whole number; executor_cores, executor_memory_mb "
                    "and extra features optional). Writes the query's rows in order with "
                    "predicted_runtime_s, lower_s, upper_s, model and extrapolation to a .csv or "
                    ".parquet file; rows beyond the runs the models were fitted on get a "
                    "warning on stderr.")
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
        X = _features(out, idx)
        iv = m.predict_interval(X, confidence=confidence)
        for k in ("predicted_runtime_s", "lower_s", "upper_s"):
            cols[k][idx] = iv[k]
        cols["extrapolation"][idx] = m.extrapolation(X)["max"]
        names[idx] = m.name_
    for k, v in cols.items():
        out[k] = v
    out["model"] = names
    return out


def _features(query: Any, idx: Any) -> dict:
    """The numeric columns of rows ``idx`` of the (numeric) query, as the models take them."""
    return {c: query[c].to_numpy()[idx] for c in query.columns if c != "job" and query[c].dtype.kind in "iuf"}


def extrapolation_warning(models: dict, predictions: Any) -> str | None:
    """How many rows of :func:`predict_table`'s output lie beyond the runs their model was fitted
    on, and where the furthest lies, in suggest's words (:func:`~sparkpredict.advice.beyond_history`);
    ``None`` when none does. A row counts from suggest's threshold
    (:data:`~sparkpredict.advice.EXTRAPOLATION_NOTED`): a hair beyond the range is a recorded
    size to the models too."""
    import numpy as np

    from ..advice import EXTRAPOLATION_NOTED, beyond_history, flat_size_reason
    from ..units import plural

    dist = predictions["extrapolation"].to_numpy(float)
    far = np.flatnonzero(dist >= EXTRAPOLATION_NOTED)
    if not len(far):
        return None
    i = int(far[np.argmax(dist[far])])
    job = str(predictions["job"].iloc[i])
    m = models[job]
    X = _features(predictions, np.array([i]))
    per_column = {c: float(v[0]) for c, v in m.extrapolation(X).items() if c != "max"}
    col = max(per_column, key=lambda c: per_column[c])
    given = X[col][0] if col in X else np.nan
    value = float(given) if np.isfinite(given) else float(m.defaults_[col])  # a default is the model's value
    where = beyond_history(col, value, *m.training_range_[col])
    k, rows = len(far), plural(len(predictions), "row")
    flat = ""
    if col == "input_bytes" and hasattr(m, "flat_beyond_sizes") and bool(m.flat_beyond_sizes(X)[0]):
        flat = (". It is predicted to take about as long as the largest size: "
                + flat_size_reason(m.training_range_[col], value))
    if k == 1:
        return (f"1 of {rows} extrapolates beyond the runs the models were fitted on (row {i + 1} below "
                f"the header, job {job}: {where}); its interval widens with the distance{flat}")
    return (f"{k} of {rows} extrapolate beyond the runs the models were fitted on (furthest: row {i + 1} "
            f"below the header, job {job}: {where}); their intervals widen with the distance{flat}")


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
    from ..units import plural

    print(f"wrote {plural(len(out), 'prediction')} to {args.out}")
    warning = extrapolation_warning(models, out)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    short = sorted(j for j, m in models.items()
                   if hasattr(m, "max_confidence") and args.confidence > m.max_confidence())
    if short:
        from ..advice import format_chance

        top = min(models[j].max_confidence() for j in short)
        print(f"warning: --confidence {format_chance(args.confidence)} is more than the runs of "
              f"{', '.join(short)} support (at most {format_chance(top)}): their intervals are the "
              "widest their out-of-fold errors give (record more runs for wider ones)", file=sys.stderr)
    return 0
