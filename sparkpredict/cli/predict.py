"""``sparkpredict predict MODEL_DIR QUERY --out PRED.csv``: runtimes with 90 % intervals."""
from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import confidence_arg

if TYPE_CHECKING:
    from ..errors import InputError

#: Bad query rows one error lists, one a line; the rest are counted ("and 3 more rows"), so
#: that a query of a million rows with a wrong column does not print a million lines.
MAX_LISTED_ROWS = 20


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "predict", help="predict runtimes for a query table with saved models",
        description="QUERY is CSV/Parquet with job, input_bytes (bytes, or a size such as 50GB "
                    "or 1.5TiB), executors (a whole number; executor_cores, executor_memory_mb "
                    "and extra features optional). Writes the query's rows in order, sizes in "
                    "bytes, with predicted_runtime_s, lower_s, upper_s, interval_level (the level "
                    "lower_s and upper_s hold: --confidence, or less where the job's runs support "
                    "less; empty without an interval), model and extrapolation to "
                    "a .csv or .parquet file. extrapolation says how far the row lies beyond the "
                    "runs its model was fitted on, in its furthest column (input size, executor "
                    "count, ...): 0 within their range, 0.5 for 50 % beyond it (1.5x the largest "
                    "value fitted, or the smallest 1.5x the row's), 2.0 for 3x. Intervals widen "
                    "with it, and rows at 0.005 or more are counted in a warning on stderr. A bad row (an "
                    "unknown or empty job, a size or count that is empty, not a number, zero or "
                    "negative, a fractional count) is an error that lists every bad row and "
                    "writes nothing, unless --skip-bad-rows is given.")
    p.add_argument("model_dir", metavar="MODEL_DIR")
    p.add_argument("query", metavar="QUERY")
    p.add_argument("--out", required=True, metavar="PRED.csv", help="PRED.csv or PRED.parquet")
    p.add_argument("--confidence", type=confidence_arg, default=0.9)
    p.add_argument("--skip-bad-rows", action="store_true",
                   help="predict the good rows and list the bad ones on stderr instead of writing "
                        "nothing (the output then lacks the bad rows: match rows by their columns, "
                        "not by line number)")
    p.set_defaults(func=run)


@dataclass(frozen=True)
class RowProblems:
    """What is wrong with a query's rows, found by :func:`check_query`."""

    #: position of the row (0 for the first below the header) -> what is wrong with it
    rows: dict[int, list[str]] = field(default_factory=dict)
    #: jobs the models lack, in the order the rows name them
    unknown_jobs: list[str] = field(default_factory=list)
    empty_jobs: bool = False
    bad_values: bool = False
    #: a cell is True or False (a column of flags, Parquet's boolean): int() reads it as 1 or 0
    booleans: bool = False

    def lines(self) -> list[str]:
        """One line a bad row (``row 4: input_bytes -1 is not a size above zero``), at most
        :data:`MAX_LISTED_ROWS`, then how many more there are."""
        from ..units import plural

        shown = sorted(self.rows)[:MAX_LISTED_ROWS]
        out = [f"row {i + 1}: {'; '.join(self.rows[i])}" for i in shown]
        if len(self.rows) > len(shown):
            out.append(f"and {plural(len(self.rows) - len(shown), 'more row')}")
        return out

    def error(self, n_rows: int, known_jobs: Collection[str] = (),
              not_fitted: Mapping[str, str] | None = None, skip_hint: str = "") -> InputError:
        """One :class:`~sparkpredict.errors.InputError` listing every bad row (one row: one
        line), with a fix for each kind of problem; ``skip_hint`` ends the fix."""
        from ..errors import InputError

        if len(self.rows) == 1:
            ((i, what),) = self.rows.items()
            message = f"query row {i + 1} below the header: {'; '.join(what)}"
        else:
            head = (f"{len(self.rows)} of {n_rows} query rows cannot be predicted "
                    "(rows counted below the header):")
            message = "\n  ".join([head, *self.lines()])
        fixes = []
        if self.unknown_jobs:
            from ..config import shown_job

            names = sorted(known_jobs)
            shown = [shown_job(n, 60) for n in names[:20]]  # as `store summary` shows them
            known = ", ".join(shown) + (f" … ({len(names)} in all)" if len(names) > 20 else "")
            fix = (f"fit {', '.join(map(repr, self.unknown_jobs))} first (`sparkpredict fit RUNS "
                   f"--out DIR`) or check the job name (known jobs: {known or '(none)'})")
            for j in self.unknown_jobs:
                if not_fitted and j in not_fitted:
                    fix += f"; {j!r} was not fitted: {not_fitted[j]}"
            fixes.append(fix)
        if self.empty_jobs:
            fixes.append("give every row the job it belongs to, as its runs were recorded "
                         "(the job column of `sparkpredict runs`)")
        if self.bad_values:
            fixes.append("write sizes as bytes or with a unit (50MB, 1.5TiB), counts as whole "
                         "numbers of at least 1 and job parameters as numbers")
        if self.booleans:
            fixes.append("a True/False cell is a boolean, no count or size: write the number in its "
                         "place (a column saved as booleans holds only True and False)")
        if skip_hint:
            fixes.append(skip_hint)
        return InputError(message, "; ".join(fixes))


def check_query(query: Any, known_jobs: Collection[str] | None = None) -> tuple[Any, RowProblems]:
    """The query with input_bytes in bytes (``50MB`` as well as a number) and the executor
    columns as numbers, and what is wrong with which rows: an empty job or one not in
    ``known_jobs`` (not checked when None), an input size or executor count that is empty, not
    a number, zero, negative or (a count) fractional. A bad cell is NaN in the returned table.
    A column missing altogether is an :class:`~sparkpredict.errors.InputError`."""
    import pandas as pd

    from ..errors import InputError
    from ..units import is_bool

    missing = [c for c in ("job", "input_bytes", "executors") if c not in query.columns]
    if missing:
        raise InputError(f"query lacks column(s) {', '.join(missing)}",
                         "give job, input_bytes and executors for every row")
    rows: dict[int, list[str]] = {}
    unknown: list[str] = []
    empty_jobs = False
    for i, job in enumerate(query["job"].tolist()):
        if _is_empty(job):
            rows.setdefault(i, []).append("job is empty")
            empty_jobs = True
        elif known_jobs is not None and str(job) not in known_jobs:
            rows.setdefault(i, []).append(f"no model for job {str(job)!r}")
            if str(job) not in unknown:
                unknown.append(str(job))
    bad_values = False
    booleans = False
    out = query.copy()
    for col in _QUERY_NUMBERS:
        if col not in out.columns:
            continue
        values = []
        for i, v in enumerate(out[col].tolist()):
            number, why = _read_cell(col, v)
            if why:
                rows.setdefault(i, []).append(f"{col} {why}")
                bad_values = True
                booleans = booleans or is_bool(v)
            values.append(number)
        given = [x for x in values if not math.isnan(x)]
        # bytes and counts stay integers (1e9 in a CSV is 1000000000 bytes, as 1GB is)
        whole = len(given) == len(values) and all(float(x).is_integer() for x in values)
        out[col] = pd.Series(values, index=out.index, dtype="int64" if whole else float)
    # Any other column that holds numbers is a job parameter the models may take (iterations=25):
    # one cell that is not a number made the whole column text, which the models then ignored,
    # every row given the history's value without a word. A column of text only is no parameter.
    for col in [c for c in out.columns if c not in ("job", *_QUERY_NUMBERS)]:
        cells = out[col].tolist()
        read = [math.nan if _is_empty(v) else _number(v) for v in cells]
        if not any(math.isfinite(x) for x in read):
            continue
        for i, (v, x) in enumerate(zip(cells, read)):
            if not _is_empty(v) and not math.isfinite(x):
                rows.setdefault(i, []).append(f"{col} {_shown(v)} is "
                                             + ("a boolean, not a number" if is_bool(v) else "not a number"))
                bad_values = True
                booleans = booleans or is_bool(v)
        out[col] = pd.Series(read, index=out.index, dtype=float)
    return out, RowProblems(rows, unknown, empty_jobs, bad_values, booleans)


#: The query's columns of sizes and counts, each read by its own rule (:func:`_read_cell`).
_QUERY_NUMBERS = ("input_bytes", "executors", "executor_cores", "executor_memory_mb")


#: A size as a person writes one: a number (a leading minus only to be refused by name) and a unit
_SIZE_TEXT = re.compile(r"(-?[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)", re.IGNORECASE)
#: Spark's byte counts are signed 64-bit integers (:func:`sparkpredict.units.parse_bytes`)
_MAX_BYTES = 2**63 - 1


def _read_cell(col: str, v: Any) -> tuple[float | int, str]:
    """Query cell ``v`` of ``col`` as a number (bytes as an int: a float cannot hold every byte
    count to 8 EiB), and ``""``; or NaN and why it is not one (an empty optional column is NaN
    and ``""``: the model's default)."""
    from ..units import is_bool

    shown = _shown(v)
    if _is_empty(v):
        return math.nan, ("is empty or NaN" if col in ("input_bytes", "executors") else "")
    if is_bool(v):
        return math.nan, f"{shown} is a boolean, not a {'size' if col == 'input_bytes' else 'number'}"
    if col == "input_bytes":
        size = _bytes(v)
        return (size, "") if isinstance(size, int) else (math.nan, f"{shown} {size}")
    number = _number(v)
    if col == "executor_memory_mb":
        if not (math.isfinite(number) and number > 0):
            return math.nan, f"{shown} is not a number of MiB above zero"
    elif not (math.isfinite(number) and number >= 1 and number.is_integer()):
        return math.nan, f"{shown} is not a whole number of at least 1"
    from ..units import MAX_EXECUTORS

    # past these no cluster runs, and an int64 column cannot hold 1e20
    most = {"executors": MAX_EXECUTORS, "executor_cores": 4096, "executor_memory_mb": 2**40}.get(col)
    if most is not None and number > most:
        return math.nan, f"{shown} is more than any cluster has (at most {most:,})"
    return number, ""


def _bytes(v: Any) -> int | str:
    """Bytes of a size cell (``64000000``, ``1e9``, ``50MB``), or why it is not a size."""
    from ..errors import InputError
    from ..units import parse_bytes

    if isinstance(v, str):
        m = _SIZE_TEXT.fullmatch(v.strip())
        if not m:
            return "is not a size"
        try:
            scale = parse_bytes(f"1{m.group(2)}")
        except InputError:  # an unknown unit
            return "is not a size"
        amount = float(m.group(1)) * scale
    else:
        amount = _number(v)
    if math.isnan(amount):
        return "is not a size"
    if not math.isfinite(amount):
        return "is not a finite size"
    if amount <= 0:
        return "is not a size above zero"
    n = int(round(amount))  # as parse_bytes rounds
    if n < 1:
        return "is less than one byte"
    if n > _MAX_BYTES:
        return "is beyond what Spark counts (8 EiB: a 64-bit byte count)"
    return n


def _number(v: Any) -> float:
    """``v`` as a float; NaN when it is not a number (text, a boolean, numpy's too)."""
    from ..units import is_bool

    if is_bool(v):
        return math.nan
    try:
        return float(v.strip() if isinstance(v, str) else v)
    except (TypeError, ValueError):
        return math.nan


def _is_empty(v: Any) -> bool:
    """An empty cell: NaN in a CSV, null in Parquet (pandas' NA of a nullable column), blanks."""
    if v is None or type(v).__name__ in ("NAType", "NaTType"):
        return True
    if isinstance(v, str):
        return not v.strip()
    try:
        return bool(math.isnan(v))
    except (TypeError, ValueError):
        return False


def _shown(v: Any) -> str:
    """A cell as the user wrote it: text quoted (``'-1MB'``), numbers bare (``-1``, ``2.5``),
    whether or not pandas read the column as numbers; a boolean as ``True``, not the 1 it counts as."""
    from ..units import is_bool

    if is_bool(v):
        return str(bool(v))
    if isinstance(v, str):
        return v.strip() if not math.isnan(_number(v)) or v.strip().lower() == "nan" else repr(v)
    try:
        x = float(v)
    except (TypeError, ValueError):
        return repr(v)
    if x.is_integer() and abs(x) < 1e16:
        return str(int(x))
    return repr(x)


def predict_table(models: dict, query: Any, confidence: float = 0.9) -> Any:
    """Query rows in order + predicted_runtime_s, lower_s, upper_s, model, extrapolation.

    Raises
    ------
    InputError
        A column is missing, or rows are bad (:func:`check_query`): one error lists every bad
        row, and nothing is predicted.
    """
    import numpy as np

    out, problems = check_query(query, models)
    if problems.rows:
        raise problems.error(len(query), models)
    n = len(out)
    from ..models.estimator import without_interval

    cols = {k: np.full(n, np.nan) for k in ("predicted_runtime_s", "lower_s", "upper_s", "interval_level",
                                             "extrapolation")}
    names = np.empty(n, dtype=object)
    jobs = out["job"].astype(str).to_numpy()
    for job in sorted(set(jobs)):
        idx = np.flatnonzero(jobs == job)
        m = models[job]
        X = _features(out, idx)
        iv = m.predict_interval(X, confidence=confidence)
        for k in ("predicted_runtime_s", "lower_s", "upper_s"):
            cols[k][idx] = iv[k]
        # the level the bounds hold, in the file itself: a capped level was said on stderr only
        top = m.max_confidence() if hasattr(m, "max_confidence") else confidence
        cols["interval_level"][idx] = np.nan if without_interval(m) else min(confidence, top)
        cols["extrapolation"][idx] = m.extrapolation(X)["max"]
        names[idx] = m.name_
    for k, v in cols.items():
        out[k] = v
    out["model"] = names
    return out


def _features(query: Any, idx: Any) -> dict:
    """The numeric columns of rows ``idx`` of the (numeric) query, as the models take them."""
    return {c: query[c].to_numpy()[idx] for c in query.columns if c != "job" and query[c].dtype.kind in "iuf"}


def extrapolation_warning(models: dict, predictions: Any, rows: Sequence[int] | None = None) -> str | None:
    """How many rows of :func:`predict_table`'s output lie beyond the runs their model was fitted
    on, and where the furthest lies, in suggest's words (:func:`~sparkpredict.advice.beyond_history`);
    ``None`` when none does. A row counts from suggest's threshold
    (:data:`~sparkpredict.advice.EXTRAPOLATION_NOTED`): a hair beyond the range is a recorded
    size to the models too. ``rows``: the query row (1 for the first below the header) of each
    prediction, when bad rows were left out; by default the predictions' own order."""
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
    row = int(rows[i]) if rows is not None else i + 1
    k, n_rows = len(far), plural(len(predictions), "row" if rows is None else "predicted row")
    flat = ""
    if col == "input_bytes" and hasattr(m, "flat_beyond_sizes") and bool(m.flat_beyond_sizes(X)[0]):
        flat = (". It is predicted to take about as long as the largest size: "
                + flat_size_reason(m.training_range_[col], value))
    if k == 1:
        return (f"1 of {n_rows} extrapolates beyond the runs the models were fitted on (row {row} below "
                f"the header, job {job}: {where}); its interval widens with the distance{flat}")
    return (f"{k} of {n_rows} extrapolate beyond the runs the models were fitted on (furthest: row {row} "
            f"below the header, job {job}: {where}); their intervals widen with the distance{flat}")


def run(args: argparse.Namespace) -> int:
    import os

    import pandas as pd

    from ..errors import InputError
    from ..features.runs import read_csv_keeping_jobs
    from ..models.estimator import without_interval
    from ..models.persist import load_models, read_index, store_given_as_models
    from ..outputs import output_table, write_table
    from ..units import plural

    output_table(args.out, "predictions.csv")
    path = args.query
    if os.path.exists(path) and os.path.exists(args.out) and os.path.samefile(path, args.out):
        raise InputError(f"--out {args.out} is the query file: the predictions would overwrite the query",
                         "give --out another file, e.g. predictions.csv")
    try:
        query = pd.read_parquet(path) if path.endswith((".parquet", ".pq")) else read_csv_keeping_jobs(path)
    except FileNotFoundError as exc:
        raise InputError(f"query file {path!r} not found", "give a CSV/Parquet with job, input_bytes, executors") from exc
    except pd.errors.EmptyDataError as exc:  # "No columns to parse from file"
        raise InputError(f"query file {path!r} is empty",
                         "give a CSV with a header line and a row per question: job,input_bytes,executors") from exc
    except Exception as exc:
        raise InputError(f"cannot read query {path!r}: {exc}", "give a CSV or Parquet file") from exc
    if "job" not in query.columns:
        raise InputError(f"query {path!r} lacks column job", "give job, input_bytes and executors for every row")
    given = store_given_as_models(args.model_dir)
    if given is not None:
        # predict has no --store: it said "give the store as --store S", a flag it refuses
        store, message = given
        raise InputError(message, "predict reads the models `sparkpredict fit` writes: fit them on the "
                         f"store's runs (`sparkpredict runs --store {store} --out runs.csv`, then "
                         "`sparkpredict fit runs.csv --out DIR`), or ask its registry's models with "
                         f"`sparkpredict suggest --store {store}`")
    index = read_index(args.model_dir)
    not_fitted = index.get("skipped")
    not_fitted = not_fitted if isinstance(not_fitted, dict) else {}
    _, problems = check_query(query, index["jobs"])  # every bad row at once, before any model loads
    rows = None
    if problems.rows:
        good = [i for i in range(len(query)) if i not in problems.rows]
        if not args.skip_bad_rows or not good:
            hint = f"or pass --skip-bad-rows to predict the {plural(len(good), 'other row')}" \
                if good and not args.skip_bad_rows else ""
            raise problems.error(len(query), index["jobs"], not_fitted, hint)
        query = query.iloc[good].reset_index(drop=True)
        rows = [i + 1 for i in good]
    if query.empty:
        raise InputError(f"query {path!r} has no rows", "give one row per prediction: job, input_bytes, executors")
    models = load_models(args.model_dir, jobs=sorted(set(query["job"].astype(str))))
    # a column no model takes (a misspelt job parameter) would be ignored without a word
    taken = {c for m in models.values() for c in (getattr(m, "feature_names_", None) or [])}
    unused = [c for c in query.columns if c != "job" and c not in taken and c not in _QUERY_NUMBERS]
    # and a feature the query lacks is the model's training median: said, as the unused are
    from ..features.runs import BASE_FEATURES

    lacking = sorted({c for j, m in models.items() if j in set(query["job"].astype(str))
                      for c in (getattr(m, "feature_names_", None) or [])
                      if c not in BASE_FEATURES and c not in query.columns})
    out = predict_table(models, query, args.confidence)
    write_table(out, args.out)
    print(f"wrote {plural(len(out), 'prediction')} to {args.out}")
    if rows is not None:
        listed = "\n  ".join(problems.lines())
        print(f"warning: skipped {len(problems.rows)} of {plural(len(problems.rows) + len(rows), 'query row')} "
              f"that cannot be predicted (rows counted below the header):\n  {listed}", file=sys.stderr)
    if unused:
        print(f"warning: query column(s) {', '.join(unused)} are no feature of the models of these jobs, "
              f"which take {', '.join(sorted(taken))}: ignored (check the spelling of a job parameter)",
              file=sys.stderr)
    if lacking:
        print(f"warning: the query lacks column(s) {', '.join(lacking)}, which the model(s) take as features: "
              "each model's median over its training runs was used (add the column to the query; a column of "
              "the runs file known only after a run is no feature: drop it there and fit again)", file=sys.stderr)
    warning = extrapolation_warning(models, out, rows)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    levels = {j: m.max_confidence() for j, m in models.items() if hasattr(m, "max_confidence")}
    # a level of 0 is no interval at all: "at most 0%" read as a measured figure
    none = sorted(j for j in set(out["job"]) if without_interval(models.get(j)))
    if none:
        from ..models.selection import CV_MIN_RUNS

        print(f"warning: the model(s) of {', '.join(none)} measured no out-of-fold error (too few runs "
              "to predict any from the others): their rows have no interval (lower_s 0, upper_s inf); "
              f"~{CV_MIN_RUNS} or more runs at two or more executor counts give one", file=sys.stderr)
    short = sorted(j for j, top in levels.items() if 0 < top < args.confidence)
    if short:
        from ..advice import format_level

        # levels, as suggest prints them: "at most 84.6%", not a chance rounded down to 84%; each
        # job's own (the lowest of them was said of all: wordcount's 84.6% as myagg's 75%)
        each = ", ".join(f"{j} at most {format_level(levels[j])}" for j in short)
        print(f"warning: --confidence {format_level(args.confidence)} is more than the runs of "
              f"{', '.join(short)} support ({each}): their intervals are the widest their out-of-fold "
              "errors give, as the interval_level column says (more runs of those jobs support a higher "
              "level)", file=sys.stderr)
    return 0
