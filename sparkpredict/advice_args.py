"""The arguments of :func:`sparkpredict.suggest_executors`, checked before any model is asked:
each mistake is one :class:`~sparkpredict.errors.InputError` that names the fix.

The checks are the same for Python callers and the CLI; only the names differ. An error names
the argument the caller gave (``min_executors=``); inside :func:`cli_flags` (the CLI's calls) it
names the flag (``--min-executors``)."""
from __future__ import annotations

import itertools
import math
import numbers
import operator
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from .errors import InputError
from .units import (
    MAX_LISTED_COUNTS,
    MIN_EXECUTOR_MEMORY_MB,
    CountLimitError,
    check_count_limit,
    is_bool,
    not_negative,
    parse_counts,
    parse_duration,
    parse_memory_mb,
    parse_user_bytes,
    shown,
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


def whole_number(value: Any) -> int | None:
    """``value`` as an int when it is a whole number (``4``, ``4.0``, ``"4"``, numpy's ints),
    else None: ``4.5``, NaN, text that is no number, and ``True``, which int() reads as 1 (a flag
    passed where a count belongs). Ints are taken as they are, not through a float, which holds
    them exactly only up to 2^53."""
    if is_bool(value):
        return None
    try:
        return operator.index(value)
    except TypeError:
        pass
    if isinstance(value, str):
        # ASCII digits only: int() also reads "1_0" and other scripts' digits, and float()
        # "1e1", each more likely a slip than a count
        m = re.fullmatch(r"\s*([+-]?[0-9]+)(?:\.0*)?\s*", value)
        return int(m.group(1)) if m else None
    try:
        f = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return int(f) if math.isfinite(f) and f.is_integer() else None


def positive_int(name: str, value: Any, example: str = "4", executors: bool = False) -> int:
    """``value`` as a whole number >= 1 (``4.0`` passes, ``4.5`` does not, nor ``True``:
    :func:`whole_number`); with ``executors``, also at most
    :data:`~sparkpredict.units.MAX_EXECUTORS`."""
    v = whole_number(value)
    if executors and v is not None:
        try:
            check_count_limit(v, arg_name(name))
        except CountLimitError as exc:
            raise InputError(exc.message, f"give a count a cluster can run, e.g. {give(name, example)}") from None
    if v is None or v < 1:
        raise InputError(f"{arg_name(name)} must be a whole number of at least 1, got {shown(value)}",
                         f"give a whole number of at least 1, e.g. {give(name, example)}")
    return v


def _number(value: Any) -> float:
    """``float(value)``; NaN for what is no number or is a bool, infinity for an int too large."""
    if is_bool(value):
        return math.nan
    try:
        return float(value)
    except OverflowError:
        return math.inf
    except (TypeError, ValueError):
        return math.nan


def positive_float(name: str, value: Any, example: str = "1") -> float:
    """``value`` as a finite float > 0."""
    v = _number(value)
    if v == math.inf and not isinstance(value, str):  # 10**400: positive, and no price or budget
        raise InputError(f"{arg_name(name)} {shown(value)} is too large to be one",
                         f"give a finite number above zero, e.g. {give(name, example)}")
    if not math.isfinite(v) or v <= 0:
        raise InputError(f"{arg_name(name)} must be a positive number, got {shown(value)}",
                         f"give a number above zero, e.g. {give(name, example)}")
    return v


def unit_fraction(name: str, value: Any, example: str = "0.5") -> float:
    """``value`` as a float in (0, 1]: a fraction of a whole, such as a marginal efficiency."""
    v = _number(value)
    if not 0 < v <= 1:  # NaN fails the comparison too
        raise InputError(f"{arg_name(name)} must be above 0 and at most 1, got {shown(value)}",
                         f"give a fraction in (0, 1], e.g. {give(name, example)}")
    return v


#: Spark reads spark.executor.cores as a 32-bit int
MAX_EXECUTOR_CORES = 2**31 - 1
#: the largest executor memory a 64-bit byte count holds, in MiB
MAX_EXECUTOR_MEMORY_MB = (2**63 - 1) // 2**20


def check_executor_cores(value: Any) -> int:
    """Cores per executor: a whole number from 1 to what Spark's setting holds."""
    cores = positive_int("executor_cores", value)
    if cores > MAX_EXECUTOR_CORES:
        raise InputError(f"{arg_name('executor_cores')} {cores:,} is beyond what spark.executor.cores "
                         f"holds (at most {MAX_EXECUTOR_CORES:,})", f"give the cores of one executor, e.g. "
                         f"{give('executor_cores', '4')}")
    return cores


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
    mb = whole_number(value)
    if mb is None:
        raise InputError(f"{arg_name('executor_memory_mb')} must be a whole number of MiB, at least "
                         f"{MIN_EXECUTOR_MEMORY_MB}, got {shown(value)}",
                         f"give at least {MIN_EXECUTOR_MEMORY_MB} MiB, e.g. {give('executor_memory_mb', '4096')}")
    if mb > MAX_EXECUTOR_MEMORY_MB:
        raise InputError(f"{arg_name('executor_memory_mb')} {mb:,} MiB is beyond what Spark counts (8 EiB: "
                         "a 64-bit byte count)", f"give one executor's memory, e.g. {give('executor_memory_mb', '4096')}")
    if mb < MIN_EXECUTOR_MEMORY_MB:
        # the CLI's value was a Spark size (4g); an argument's a number of MiB
        given = f"{mb} MiB" if _cli("executor_memory_mb") else str(mb)
        least = f"{MIN_EXECUTOR_MEMORY_MB}m" if _cli("executor_memory_mb") else str(MIN_EXECUTOR_MEMORY_MB)
        raise InputError(f"{arg_name('executor_memory_mb')} {given} is too small: under "
                         f"{MIN_EXECUTOR_MEMORY_MB} MiB, the least Spark starts an executor with",
                         f"give at least {give('executor_memory_mb', least)}")
    return mb


def read_duration(text: Any) -> float:
    """A deadline in seconds (:func:`~sparkpredict.units.parse_duration`), a negative one said so."""
    not_negative("duration", text, "45m")
    return parse_duration(text)


def check_args(input_bytes: Any, deadline_s: Any, objective: str, confidence: float,
               min_executors: Any, max_executors: Any) -> tuple[int, float | None, float, int, int | None]:
    """(size in bytes, deadline in s or None, confidence, min executors, max executors or None)."""
    size = parse_user_bytes(input_bytes)
    deadline = None if deadline_s is None else read_duration(deadline_s)
    if not isinstance(objective, str) or objective not in OBJECTIVES:  # an array's "in" is no answer
        cost, time, knee = ((f"{CLI_FLAGS['objective']} {o}" if _cli("objective") else f"objective={o!r}")
                            for o in OBJECTIVES)
        raise InputError(f"unknown objective {shown(objective)}",
                         f"use {cost} (cheapest meeting the deadline), {time} (fastest) "
                         f"or {knee} (where more executors stop paying off)")
    # imported here: it loads numpy, which the advice needs only once it runs
    from .models.columns import check_confidence, meant_level

    try:
        conf = check_confidence(confidence)
    except InputError as exc:  # its fix names the CLI's flag; here the caller's name is known
        meant = meant_level(confidence)
        raise InputError(exc.message, f"give {give('confidence', meant)}" if meant else
                         f"give e.g. {give('confidence', '0.9')}") from None
    lo = positive_int("min_executors", min_executors, executors=True)
    hi = None if max_executors is None else positive_int("max_executors", max_executors, "16", executors=True)
    if hi is not None and hi < lo:
        raise InputError(f"{arg_name('max_executors')} ({hi}) is below {arg_name('min_executors')} ({lo})",
                         f"give {arg_name('max_executors')} at least as large as {arg_name('min_executors')}")
    return size, deadline, conf, lo, hi


@dataclass(frozen=True)
class SuggestArgs:
    """The arguments of :func:`suggest_executors`, checked: sizes in bytes, times in seconds."""

    input_bytes: int
    deadline_s: float | None
    confidence: float
    min_executors: int
    max_executors: int | None
    price_per_executor_hour: float | None
    budget: float | None
    knee_efficiency: float
    executor_cores: int | None
    executor_memory_mb: int | None
    #: the candidate counts asked for within min/max, and those of them left out by min/max
    executor_counts: list[int] | None
    left_out: list[int]
    params: dict[str, float]

    def within(self) -> str:
        """The counts min/max allow, as an error or warning names them."""
        return _within(self.min_executors, self.max_executors)


def _within(lo: int, hi: int | None) -> str:
    return (f"{lo} or more ({arg_name('min_executors')})" if hi is None else
            f"from {lo} to {hi} ({arg_name('min_executors')}, {arg_name('max_executors')})")


def check_suggest_args(job: Any, input_bytes: Any, *, deadline_s: Any = None, objective: Any = "cost",
                       executor_cores: Any = None, executor_memory_mb: Any = None, min_executors: Any = 1,
                       max_executors: Any = None, price_per_executor_hour: Any = None, budget: Any = None,
                       confidence: Any = 0.9, knee_efficiency: Any = 0.5, executor_counts: Any = None,
                       params: Any = None, models: Any = None) -> SuggestArgs:
    """Check every argument of :func:`suggest_executors` that needs no history, as it does before
    it reads one: ``submit --executors auto`` calls it before its fit, so that a bad value is
    refused at once and no fit is cached for a question that was never asked.

    Raises
    ------
    InputError
        The first argument that is wrong, and its fix.
    """
    size, deadline, confidence, lo, hi = check_args(input_bytes, deadline_s, objective, confidence,
                                                     min_executors, max_executors)
    # a price of 0 makes every count free: no price to compare by, so refused as "not positive"
    price = None if price_per_executor_hour is None else positive_float(
        "price_per_executor_hour", price_per_executor_hour, "0.25")
    budget_v = None if budget is None else positive_float("budget", budget, "0.5")
    knee_eff = unit_fraction("knee_efficiency", knee_efficiency, "0.5")
    cores = None if executor_cores is None else check_executor_cores(executor_cores)
    mem = None if executor_memory_mb is None else check_executor_memory_mb(executor_memory_mb)
    counts = None
    left_out: list[int] = []
    if executor_counts is not None:
        listed = check_executor_counts(executor_counts)
        counts = [c for c in listed if c >= lo and (hi is None or c <= hi)]
        left_out = sorted(set(listed) - set(counts))
        if not counts:
            raise InputError(f"no executor count in {arg_name('executor_counts')} is {_within(lo, hi)}",
                             f"widen {arg_name('min_executors')}/{arg_name('max_executors')} "
                             "or the list of counts")

    given_params = check_params(params)
    if not isinstance(job, str) or not job.strip():
        raise InputError(f"job must be a job's name, got {shown(job)}",
                         "give the name its runs were recorded under, e.g. "
                         + ("--job nightly-etl" if _cli("job") else "suggest_executors(\"nightly-etl\", ...)"))
    if models is not None and not isinstance(models, (Mapping, str, os.PathLike)):
        from .advice_source import _MODELS_FIX

        raise InputError(f"models must be a dict of fitted models or a model folder, got {type(models).__name__}",
                         _MODELS_FIX)
    return SuggestArgs(size, deadline, confidence, lo, hi, price, budget_v, knee_eff, cores, mem, counts,
                       left_out, given_params)


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
    counts: set[int] = set()
    # islice: a range(1, 10**12) or an endless iterator is refused, not materialised
    for i, c in enumerate(itertools.islice(items, MAX_LISTED_COUNTS + 1)):
        if i == MAX_LISTED_COUNTS:
            raise InputError(f"{arg_name('executor_counts')} holds more than {MAX_LISTED_COUNTS:,} counts",
                             f"list fewer counts, e.g. {eg}; a wide range is thinned by itself when given as "
                             f"{arg_name('min_executors')} and {arg_name('max_executors')}")
        v = whole_number(c)
        if v is None or v < 1:
            raise InputError(f"{arg_name('executor_counts')} must hold whole numbers of at least 1, "
                             f"got {shown(c)}", f"give whole numbers of at least 1, e.g. {eg}")
        try:
            check_count_limit(v, f"{arg_name('executor_counts')}: executor count")
        except InputError as exc:
            raise InputError(exc.message, f"give counts a cluster can run, e.g. {eg}") from None
        counts.add(v)
    if not counts:  # else "no count is 1 or more", whose fix (widen min/max) does not apply
        raise InputError(f"{arg_name('executor_counts')} lists no executor count",
                         f"give whole numbers of at least 1, e.g. {eg}, or leave it out for the default range")
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
        f = _number(v)
        if not math.isfinite(f):
            eg = f"{CLI_FLAGS['params']} {k}=25" if _cli("params") else f"params={{{str(k)!r}: 25}}"
            what = "a finite number" if isinstance(v, numbers.Real) and not is_bool(v) else "a number"
            raise InputError(f"job parameter {shown(k)} = {shown(v)} is not {what}",
                             f"give a finite number, e.g. {eg}")
        out[str(k)] = f
    return out


__all__ = [
    "CLI_FLAGS",
    "OBJECTIVES",
    "SuggestArgs",
    "arg_name",
    "check_args",
    "check_executor_cores",
    "check_executor_counts",
    "check_executor_memory_mb",
    "check_params",
    "check_suggest_args",
    "cli_flags",
    "give",
    "positive_float",
    "positive_int",
    "read_duration",
    "unit_fraction",
    "whole_number",
]
