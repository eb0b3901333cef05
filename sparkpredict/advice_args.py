"""The arguments of :func:`sparkpredict.suggest_executors`, checked before any model is asked:
each mistake is one :class:`~sparkpredict.errors.InputError` that names the fix (the CLI flag)."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .errors import InputError
from .units import parse_bytes, parse_duration

OBJECTIVES = ("cost", "time", "knee")


def positive_int(name: str, value: Any, flag: str) -> int:
    """``value`` as a whole number >= 1 (``4.0`` passes, ``4.5`` does not)."""
    try:
        v = int(value)
        ok = v == float(value) and v >= 1
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise InputError(f"{name} must be a whole number of at least 1, got {value!r}",
                         f"give {flag} as a positive integer, e.g. {flag} 4")
    return v


def positive_float(name: str, value: Any, flag: str, allow_zero: bool = False) -> float:
    """``value`` as a finite float > 0 (>= 0 with ``allow_zero``)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = float("nan")
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise InputError(f"{name} must be a positive number, got {value!r}",
                         f"give {flag} as a number above zero")
    return v


def check_args(input_bytes: Any, deadline_s: Any, objective: str, confidence: float,
                min_executors: Any, max_executors: Any) -> tuple[int, float | None, float, int, int | None]:
    """(size in bytes, deadline in s or None, confidence, min executors, max executors or None)."""
    for what, v, eg in (("size", input_bytes, "64MB"), ("duration", deadline_s, "45m")):
        if isinstance(v, str) and v.strip().startswith("-"):
            raise InputError(f"{what} {v!r} must be positive", f"give a {what} above zero, e.g. {eg}")
    size = parse_bytes(input_bytes)
    deadline = None if deadline_s is None else parse_duration(deadline_s)
    if objective not in OBJECTIVES:
        raise InputError(f"unknown objective {objective!r}",
                         "use --objective cost (cheapest meeting the deadline), time (fastest) "
                         "or knee (where more executors stop paying off)")
    # imported here: it loads numpy, which the advice needs only once it runs
    from .models.columns import check_confidence

    conf = check_confidence(confidence)
    lo = positive_int("min_executors", min_executors, "--min-executors")
    hi = None if max_executors is None else positive_int("max_executors", max_executors,
                                                          "--max-executors")
    if hi is not None and hi < lo:
        raise InputError(f"max_executors ({hi}) is below min_executors ({lo})",
                         "give --max-executors at least as large as --min-executors")
    return size, deadline, conf, lo, hi


def check_params(params: Any) -> dict[str, float]:
    """name -> finite float; InputError naming the fix otherwise."""
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise InputError(f"params must map names to numbers, got {type(params).__name__}",
                         "pass e.g. params={'iterations': 25}")
    out = {}
    for k, v in params.items():
        try:
            f = float(v)
        except (TypeError, ValueError):
            f = math.nan
        if not math.isfinite(f):
            raise InputError(f"job parameter {k!r} = {v!r} is not a number",
                             "give a finite number, e.g. --param iterations=25")
        out[str(k)] = f
    return out


__all__ = ["OBJECTIVES", "check_args", "check_params", "positive_float", "positive_int"]
