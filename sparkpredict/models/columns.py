"""What a user hands a runtime model, checked: tables as float columns, a confidence level
(numpy only).

Training runs and queries arrive as DataFrames or mappings of arrays, with text, ints or
length-1 columns among them; these helpers turn them into float arrays, or raise one
:class:`~sparkpredict.errors.InputError` naming the column and the value.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import InputError

REQUIRED = ("input_bytes", "executors")


def is_range(lo: float, hi: float) -> bool:
    """Whether a saved range ``[lo, hi]`` can be one: both ends finite and in order. A model's
    training range and a component's box are both read back from files a hand may edit; a NaN
    bound reads every row as inside it (or predicts NaN seconds beyond it)."""
    return math.isfinite(lo) and math.isfinite(hi) and lo <= hi


def floats(values: Any, name: str, what: str = "query") -> np.ndarray:
    """``values`` as a float array, or one error naming the column (not numpy's ValueError)."""
    try:
        return np.asarray(values, dtype=float).ravel()
    except (TypeError, ValueError):
        bad = next((v for v in np.asarray(values, dtype=object).ravel() if not _is_number(v)), None)
        raise InputError(f"{what} column {name!r} holds {bad!r}, not a number",
                         "give sizes in bytes and counts as numbers "
                         "(sparkpredict.units.parse_bytes reads '300GB')") from None


def _is_number(v: Any) -> bool:
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


def column(X: Mapping[str, Any], name: str, n: int | None) -> np.ndarray | None:
    """Query column ``name`` as ``n`` floats (a single value broadcasts); None when absent."""
    if name not in X:
        return None
    v = floats(X[name], name)
    if n is not None and len(v) != n:
        if len(v) != 1:
            raise InputError(f"query column {name!r} has {len(v)} values for {n} rows",
                             "give one value per row, or a single value to use for every row")
        v = np.repeat(v, n)
    return v


def n_rows(X: Mapping[str, Any]) -> int:
    """Rows of a query: the longest required column (length-1 columns broadcast)."""
    check_table(X, "the query")  # an array: "lacks column(s) input_bytes" compared its elements
    sizes = {int(np.asarray(X[c]).size) for c in REQUIRED if c in X}
    if not sizes:
        raise InputError(f"query lacks column(s) {', '.join(REQUIRED)}",
                         "give input_bytes and executors for every row")
    n = max(sizes)
    if sizes - {1, n}:
        raise InputError(f"query columns differ in length ({sorted(sizes)})",
                         "give one value per row, or a single value to use for every row")
    return n


def check_table(X: Any, what: str = "X") -> None:
    """Refuse what is no table of named columns (a DataFrame or a mapping): a numpy array has no
    column names to read sizes and executor counts from (it was an AttributeError)."""
    if not (hasattr(X, "columns") or isinstance(X, Mapping)):
        raise InputError(f"{what} must be a runs table with named columns (a pandas DataFrame or a dict of "
                         f"columns), got {type(X).__name__}",
                         "pass e.g. pandas.DataFrame({'input_bytes': [...], 'executors': [...]}) "
                         "(sparkpredict.features.runs.runs_table gives one from a store)")


def with_runtime(X: Any, y: Any) -> Any:
    """``X`` with ``y`` as its ``runtime_s`` column (scikit-learn's ``fit(X, y)``)."""
    check_table(X)
    y = np.asarray(y, dtype=float).ravel()
    n = len(X) if hasattr(X, "columns") else len(np.atleast_1d(next(iter(X.values()), [])))
    if len(y) != n:
        raise InputError(f"y has {len(y)} runtimes for {n} rows of X", "give one runtime (s) per row")
    return X.assign(runtime_s=y) if hasattr(X, "assign") else {**X, "runtime_s": y}


def read_level(value: Any) -> float:
    """A level as a number: ``0.9``, or a string ``"0.9"`` or ``"90%"``, as the advice writes
    levels; its range unchecked (:func:`check_confidence`). Raises ValueError or TypeError."""
    text = value.strip() if isinstance(value, str) else None
    return float(text[:-1]) / 100 if text and text.endswith("%") else float(value)


def check_confidence(value: Any) -> float:
    """``value`` as a confidence level strictly between 0 and 1 (every model and the advice),
    read by :func:`read_level`."""
    from ..units import is_bool, shown

    try:
        c = read_level(value)
    except (TypeError, ValueError, OverflowError):  # float() of a 400-digit int overflows
        c = math.nan
    meant = meant_level(value)
    if is_bool(value) or not 0.0 < c < 1.0:
        raise InputError(f"confidence must lie strictly between 0 and 1, got {shown(value)}",
                         f"give {meant} for a {_pct(meant)} interval" if meant else
                         "give a level between 0 and 1, e.g. 0.9 (or 90%) for a 90% interval")
    if meant:  # "0.95%": a level no one asks for, most likely 95 % with a stray sign
        raise InputError(f"confidence {shown(value)} is a {c:.2%} interval",
                         f"give {meant} for a {_pct(meant)} interval (a percent sign makes a number hundredths)")
    return c


def supported_level(n_errors: int) -> float:
    """The highest confidence ``n_errors`` out-of-sample errors support, as split-conformal reads
    them: above ``(n - 1) / (n + 1)`` the bound is unbounded (none without errors)."""
    return (n_errors - 1) / (n_errors + 1) if n_errors else 0.0


def meant_level(value: Any) -> str | None:
    """The level a user most likely meant where the one given is a percentage written as a
    fraction or the other way round: ``95`` -> ``"0.95"`` (50 to 100, the levels intervals are
    asked at), ``"0.95%"`` -> ``"0.95"`` (0.5 % to 1 %: a level under 1 % asks for an interval of no use);
    None otherwise."""
    text = value.strip() if isinstance(value, str) else None
    try:
        if text and text.endswith("%"):
            x = float(text[:-1])
            return f"{x:g}" if 0.5 <= x < 1.0 else None
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return f"{x / 100:g}" if 50.0 <= x < 100.0 else None


def _pct(level: str) -> str:
    return f"{float(level) * 100:g}%"


def json_float(v) -> float | None:
    """``v`` as a float, or None for NaN and infinities, which JSON has no numbers for
    (``json.dumps`` writes them as bare ``NaN``/``Infinity``, which other readers refuse)."""
    return None if v is None or not math.isfinite(float(v)) else float(v)


__all__ = ["REQUIRED", "check_confidence", "column", "floats", "json_float", "meant_level", "n_rows",
           "read_level", "with_runtime"]
