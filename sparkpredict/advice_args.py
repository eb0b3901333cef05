"""The arguments of :func:`sparkpredict.suggest_executors`, checked before any model is asked:
each mistake is one :class:`~sparkpredict.errors.InputError` that names the fix.

The checks are the same for Python callers and the CLI; only the names differ. An error names
the argument the caller gave (``min_executors=``); inside :func:`cli_flags` (the CLI's calls) it
names the flag (``--min-executors``)."""
from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from .errors import InputError
from .units import (
    MAX_LISTED_COUNTS,
    MIN_EXECUTOR_MEMORY_MB,
    CountLimitError,
    check_count_limit,
    parse_bytes,
    parse_counts,
    parse_duration,
    parse_memory_mb,
)

OBJECTIVES = ("cost", "time", "knee")

#: argument -> the CLI flag that sets it (``sparkpredict suggest``, ``submit``); an argument
#: without one (``knee_efficiency``) keeps its own name everywhere
CLI_FLAGS = {"min_executors": "--min-executors", "max_executors": "--max-executors",
             "executor_cores": "--executor-cores", "executor_memory_mb": "--executor-memory",
             "price_per_executor_hour": "--price", "budget": "--budget", "confidence": "--confidence",
             "objective": "--objective", "params": "--param", "executor_counts": "--executor-counts",
             "store": "--store", "models": "--models", "job": "--job"}
_CLI: ContextVar[bool] = ContextVar("sparkpredict_cli_flags", default=False)


@contextmanager
def cli_flags() -> Iterator[None]:
    """Within it, the errors of these checks name the CLI's flags instead of the arguments."""
    token = _CLI.set(True)
    try:
        yield
    finally:
        _CLI.reset(token)


def _cli(arg: str) -> bool:
    return _CLI.get() and arg in CLI_FLAGS


def arg_name(arg: str) -> str:
    """``min_executors``, or ``--min-executors`` from the CLI."""
    return CLI_FLAGS[arg] if _cli(arg) else arg


def give(arg: str, example: str) -> str:
    """The argument set to ``example`` as the caller writes it: ``min_executors=4`` or
    ``--min-executors 4``."""
    return f"{CLI_FLAGS[arg]} {example}" if _cli(arg) else f"{arg}={example}"


def positive_int(name: str, value: Any, example: str = "4", executors: bool = False) -> int:
    """``value`` as a whole number >= 1 (``4.0`` passes, ``4.5`` does not, nor ``True``, which
    int() reads as 1: a flag passed where a count belongs); with ``executors``, also at most
    :data:`~sparkpredict.units.MAX_EXECUTORS`."""
    try:
        v = int(value)
        ok = v == float(value) and v >= 1 and not isinstance(value, bool)
    except (TypeError, ValueError, OverflowError):  # float() of a 400-digit int overflows
        v, ok = 0, False
    whole = value if isinstance(value, int) and not isinstance(value, bool) else (v if ok else None)
    if executors and whole is not None:
        try:
            check_count_limit(whole, arg_name(name))
        except CountLimitError as exc:
            raise InputError(exc.message, f"give a count a cluster can run, e.g. {give(name, example)}") from None
    if not ok:
        raise InputError(f"{arg_name(name)} must be a whole number of at least 1, got {value!r}",
                         f"give a whole number of at least 1, e.g. {give(name, example)}")
    return v


def positive_float(name: str, value: Any, example: str = "1") -> float:
    """``value`` as a finite float > 0."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = float("nan")
    if not math.isfinite(v) or v <= 0 or isinstance(value, bool):
        raise InputError(f"{arg_name(name)} must be a positive number, got {value!r}",
                         f"give a number above zero, e.g. {give(name, example)}")
    return v


def unit_fraction(name: str, value: Any, example: str = "0.5") -> float:
    """``value`` as a float in (0, 1]: a fraction of a whole, such as a marginal efficiency."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = float("nan")
    if isinstance(value, bool) or not 0 < v <= 1:  # NaN fails the comparison too
        raise InputError(f"{arg_name(name)} must be above 0 and at most 1, got {value!r}",
                         f"give a fraction in (0, 1], e.g. {give(name, example)}")
    return v


def check_executor_memory_mb(value: Any) -> int:
    """Executor memory in MiB, at least :data:`~sparkpredict.units.MIN_EXECUTOR_MEMORY_MB`.

    A string reads as ``spark.executor.memory`` does (``4g``, ``512m``; a bare number is MiB),
    by the parser ``--executor-memory`` uses, so one string means one size wherever it is given;
    a number is MiB."""
    if isinstance(value, str):
        try:
            return parse_memory_mb(value, MIN_EXECUTOR_MEMORY_MB)
        except InputError as exc:
            if _cli("executor_memory_mb"):  # its fix already reads as the flag's value
                raise
            raise InputError(exc.message, f"give at least {MIN_EXECUTOR_MEMORY_MB} MiB as a Spark size or "
                             "a number of MiB, e.g. executor_memory_mb='4g' or executor_memory_mb=4096") from None
    mb = positive_int("executor_memory_mb", value, "4096")
    if mb < MIN_EXECUTOR_MEMORY_MB:
        # the CLI's value was a Spark size (4g); an argument's a number of MiB
        shown = f"{mb} MiB" if _cli("executor_memory_mb") else str(mb)
        least = f"{MIN_EXECUTOR_MEMORY_MB}m" if _cli("executor_memory_mb") else str(MIN_EXECUTOR_MEMORY_MB)
        raise InputError(f"{arg_name('executor_memory_mb')} {shown} is too small: under "
                         f"{MIN_EXECUTOR_MEMORY_MB} MiB, the least Spark starts an executor with",
                         f"give at least {give('executor_memory_mb', least)}")
    return mb


def check_args(input_bytes: Any, deadline_s: Any, objective: str, confidence: float,
               min_executors: Any, max_executors: Any) -> tuple[int, float | None, float, int, int | None]:
    """(size in bytes, deadline in s or None, confidence, min executors, max executors or None)."""
    for what, v, eg in (("size", input_bytes, "64MB"), ("duration", deadline_s, "45m")):
        if isinstance(v, str) and v.strip().startswith("-"):
            raise InputError(f"{what} {v!r} must be positive", f"give a {what} above zero, e.g. {eg}")
    size = parse_bytes(input_bytes)
    deadline = None if deadline_s is None else parse_duration(deadline_s)
    if objective not in OBJECTIVES:
        cost, time, knee = ((f"{CLI_FLAGS['objective']} {o}" if _cli("objective") else f"objective={o!r}")
                            for o in OBJECTIVES)
        raise InputError(f"unknown objective {objective!r}",
                         f"use {cost} (cheapest meeting the deadline), {time} (fastest) "
                         f"or {knee} (where more executors stop paying off)")
    # imported here: it loads numpy, which the advice needs only once it runs
    from .models.columns import check_confidence

    try:
        conf = check_confidence(confidence)
    except InputError as exc:  # its fix names the CLI's flag; here the caller's name is known
        raise InputError(exc.message, f"give e.g. {give('confidence', '0.9')}") from None
    lo = positive_int("min_executors", min_executors, executors=True)
    hi = None if max_executors is None else positive_int("max_executors", max_executors, "16", executors=True)
    if hi is not None and hi < lo:
        raise InputError(f"{arg_name('max_executors')} ({hi}) is below {arg_name('min_executors')} ({lo})",
                         f"give {arg_name('max_executors')} at least as large as {arg_name('min_executors')}")
    return size, deadline, conf, lo, hi


def check_executor_counts(value: Any) -> list[int]:
    """Explicit candidate counts, sorted and distinct: whole numbers >= 1, as a sequence or as one
    comma-separated string (``"2,4,8"``, as ``--executor-counts`` takes them)."""
    eg = give("executor_counts", "2,4,8" if _cli("executor_counts") else "[2, 4, 8]")
    if isinstance(value, str):
        # one value, not a sequence of characters ("2,4" would read as '2', ',', '4'), in the
        # syntax every command's list of counts takes (ranges: "2-8")
        try:
            return sorted(set(parse_counts(value)))
        except InputError as exc:
            # a count or a list too large has a fix of its own; a misspelt one the example
            raise InputError(f"{arg_name('executor_counts')}: {exc.message}",
                             exc.fix if isinstance(exc, CountLimitError) else
                             f"give whole numbers of at least 1, e.g. {eg}") from None
    items = value
    # a 0-d numpy array is Iterable by its type, yet iterating it raises TypeError
    if isinstance(items, (bytes, Mapping)) or not isinstance(items, Iterable) or getattr(items, "ndim", 1) == 0:
        raise InputError(f"{arg_name('executor_counts')} must list executor counts, got {value!r}",
                         f"give whole numbers of at least 1, e.g. {eg}")
    counts = set()
    # islice: a range(1, 10**12) or an endless iterator is refused, not materialised
    for i, c in enumerate(itertools.islice(items, MAX_LISTED_COUNTS + 1)):
        if i == MAX_LISTED_COUNTS:
            raise InputError(f"{arg_name('executor_counts')} holds more than {MAX_LISTED_COUNTS:,} counts",
                             f"list fewer counts, e.g. {eg}; a wide range is thinned by itself when given as "
                             f"{arg_name('min_executors')} and {arg_name('max_executors')}")
        try:
            v = int(c)
            ok = v == float(c) and v >= 1 and not isinstance(c, bool)
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise InputError(f"{arg_name('executor_counts')} must hold whole numbers of at least 1, "
                             f"got {c!r}", f"give whole numbers of at least 1, e.g. {eg}")
        try:
            check_count_limit(v, f"{arg_name('executor_counts')} holds")
        except InputError as exc:
            raise InputError(exc.message, f"give counts a cluster can run, e.g. {eg}") from None
        counts.add(v)
    return sorted(counts)


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
            eg = f"{CLI_FLAGS['params']} {k}=25" if _cli("params") else f"params={{{str(k)!r}: 25}}"
            raise InputError(f"job parameter {k!r} = {v!r} is not a number",
                             f"give a finite number, e.g. {eg}")
        out[str(k)] = f
    return out


__all__ = ["CLI_FLAGS", "OBJECTIVES", "arg_name", "check_args", "check_executor_counts",
           "check_executor_memory_mb", "check_params", "cli_flags", "give", "positive_float", "positive_int",
           "unit_fraction"]
