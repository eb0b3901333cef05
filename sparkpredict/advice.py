"""The advice as data: :class:`Advice` and its :class:`Candidate` rows.

:func:`sparkpredict.advise.suggest_executors` builds them; only :meth:`Advice.summary` and
:func:`candidate_table` turn them into text, for the CLI and the report alike.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from .units import (
    byte_units_of,
    format_amount,
    format_bytes,
    format_bytes_in,
    format_duration,
    format_executor_hours,
    format_number,
    format_percent,
    plural,
)

if TYPE_CHECKING:
    import pandas as pd

#: ``Advice.extrapolates`` (and the CLI's line) ignores distances below this: "300GB" against a
#: recorded 299.99 GB is a recorded size to the model too (``intervals.SEEN_SIZE_TOLERANCE``),
#: and "extrapolates +0%" only puzzles. ``Advice.extrapolation`` keeps the exact distances.
EXTRAPOLATION_NOTED = 0.005


@dataclass(frozen=True)
class Candidate:
    """One executor count the advice considered."""

    executors: int
    predicted_runtime_s: float
    lower_s: float
    #: infinity where the model has no finite bound (a job with a single run: one run says
    #: nothing about run-to-run spread); such a candidate never meets a deadline, and
    #: ``Advice.to_dict()`` gives null
    upper_s: float
    cost_executor_hours: float
    cost_money: float | None
    meets_deadline: bool | None
    #: input bytes per byte of executor memory over all executors (None when memory unknown)
    input_per_memory: float | None = None
    #: chance (0..1) that one run finishes within the deadline; None without a deadline or
    #: for a model that cannot say (one without ``chance_within``)
    chance_meets_deadline: float | None = None


@dataclass(frozen=True, repr=False)  # repr: one line (see __repr__), not every candidate
class Advice:
    """The advice for one job and input size: data, formatted only by :meth:`summary` / the CLI."""

    # frozen, but it holds dicts (extrapolation, params, training range): hash() said "unhashable
    # type: 'dict'", naming neither the class nor the field
    __hash__ = None  # type: ignore[assignment]

    job: str
    input_bytes: int
    objective: str
    confidence: float
    executors: int
    predicted_runtime_s: float
    lower_s: float
    #: infinity without a finite bound (see :attr:`Candidate.upper_s`)
    upper_s: float
    cost_executor_hours: float
    cost_money: float | None
    deadline_s: float | None
    #: None without a deadline; False when no candidate met it (the count most likely to make it
    #: is given instead: the highest chance, then the lowest upper bound)
    meets_deadline: bool | None
    candidates: tuple[Candidate, ...]
    model_name: str
    #: the model's cross-validated MAPE (fraction); for a job with a single run, which cannot be
    #: cross-validated, the replay's self-check error instead (:func:`self_checked`,
    #: :attr:`model_error`)
    model_cv_mape: float | None
    n_runs: int | None
    extrapolates: bool
    #: column -> how far the chosen configuration lies outside the training range (0 = inside;
    #: 1.0 = twice the largest, or half the smallest: :attr:`training_range` tells which)
    extrapolation: dict[str, float] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    #: suggested (spark.dynamicAllocation.minExecutors, maxExecutors)
    dynamic_allocation: tuple[int, int] = (1, 1)
    knee_executors: int | None = None
    executor_cores: int | None = None
    executor_memory_mb: int | None = None
    price_per_executor_hour: float | None = None
    budget: float | None = None
    #: the job parameters the prediction used (given, or assumed from the history; see warnings)
    params: dict[str, float] = field(default_factory=dict)
    #: the chosen count's chance (0..1) that one run finishes within the deadline
    chance_meets_deadline: float | None = None
    #: column -> (smallest, largest) value among the runs the model learnt from
    training_range: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: the level of the interval given, where the model's out-of-fold errors support less than
    #: ``confidence`` (12 errors: at most 84 %); None when it is ``confidence`` itself
    interval_confidence: float | None = None
    #: False when no run of the job recorded an input size: the advice is for the work its runs
    #: did (a replay of their tasks), whatever ``input_bytes`` says, and the size changed nothing
    input_size_used: bool = True
    #: where the model came from, in words: "from the registry, version 3 (retrain ..., local
    #: path)", "fitted on the store's runs", "from the model folder DIR", "from the models
    #: given"; None when not known
    model_source: str | None = None

    @property
    def shown_confidence(self) -> float:
        """The level of the intervals given: ``confidence``, or the lower one the model's
        errors support (:attr:`interval_confidence`). Every label of the advice states it."""
        return self.confidence if self.interval_confidence is None else self.interval_confidence

    def __repr__(self) -> str:
        # the dataclass's own repr lists every candidate (up to 256): a screenful in a notebook
        interval = f"~{format_runtime(self.predicted_runtime_s)} ({self._interval_words()})"
        deadline = None if self.deadline_s is None else (
            f"{self._verdict(self.meets_deadline, self.chance_meets_deadline, self.predicted_runtime_s)} "
            f"{format_duration(self.deadline_s)}")
        return (f"Advice(job={self.job!r}, input={format_bytes(self.input_bytes)!r}, "
                f"executors={self.executors}, runtime={interval!r}, deadline={deadline!r}, "
                f"candidates={len(self.candidates)})")

    @property
    def knee_reached(self) -> bool | None:
        """Whether more executors than :attr:`knee_executors` stop paying off among the
        candidates (False: the knee is the largest, and more still paid off); None without a
        knee (one candidate: no curve)."""
        if len(self.candidates) < 2 or self.knee_executors is None:
            return None
        return self.knee_executors < self.candidates[-1].executors

    @property
    def chosen(self) -> Candidate:
        return next(c for c in self.candidates if c.executors == self.executors)

    @property
    def model_error(self) -> str:
        """The model's error as the CLI names it: ``CV MAPE 4.7%``, or for a single run's
        replay (nothing to cross-validate with) ``replay self-check error 0.7%``."""
        mape = "n/a" if self.model_cv_mape is None else f"{self.model_cv_mape:.1%}"
        return (f"replay self-check error {mape}" if self_checked(self.model_name, self.n_runs)
                else f"CV MAPE {mape}")

    def _verdict(self, meets: bool | None, chance: float | None, predicted_s: float) -> str | None:
        """:func:`deadline_verdict` against this advice's deadline; None without one."""
        if self.deadline_s is None:
            return None
        return deadline_verdict(meets, chance, predicted_s, self.deadline_s)

    def candidate_verdicts(self) -> list[str] | None:
        """Each candidate's :func:`deadline_verdict` (``meets``, ``may miss``, ``misses``), as
        the CLI's table, ``to_dict()`` and :meth:`candidates_frame` give it; None without a
        deadline."""
        if self.deadline_s is None:
            return None
        return [str(self._verdict(c.meets_deadline, c.chance_meets_deadline, c.predicted_runtime_s))
                for c in self.candidates]

    def candidates_frame(self) -> pd.DataFrame:
        """The candidate table as a pandas DataFrame, one row per executor count; with a deadline
        also its ``deadline_verdict`` column, as ``to_dict()``'s candidates carry it."""
        import pandas as pd

        df = pd.DataFrame([asdict(c) for c in self.candidates])
        df["chosen"] = df["executors"] == self.executors
        verdicts = self.candidate_verdicts()
        if verdicts is not None:
            df["deadline_verdict"] = verdicts
        return df

    def _interval_words(self) -> str:
        """``90% interval 7.0s-9.2s``, or for a choice without a finite upper bound (a single
        run's replay) ``no 90% interval from 1 run``: ``9.7s-inf`` would read as a bound."""
        pct = format_level(self.shown_confidence)
        if math.isfinite(self.upper_s):
            return f"{pct} interval {format_runtime(self.lower_s)}-{format_runtime(self.upper_s)}"
        return f"no {pct} interval " + ("from 1 run" if self.n_runs == 1 else "(no measured error)")

    def summary(self) -> str:
        """One line: the choice, its runtime interval, cost and deadline verdict."""
        pct = format_level(self.shown_confidence)
        money = f" (cost {format_amount(self.cost_money)})" if self.cost_money is not None else ""
        on = (f"on {format_bytes(self.input_bytes)}" if self.input_size_used else
              f"as its runs ran (they recorded no input size, so {format_bytes(self.input_bytes)} was not used)")
        s = (f"{self.job} {on}: {plural(self.executors, 'executor')}, "
             f"~{format_runtime(self.predicted_runtime_s)} ({self._interval_words()}), "
             f"{format_executor_hours(self.cost_executor_hours)} executor-h{money}")
        if self.deadline_s is not None:
            verdict = deadline_verdict(self.meets_deadline, self.chance_meets_deadline,
                                       self.predicted_runtime_s, self.deadline_s)
            s += f"; {verdict} deadline {format_duration(self.deadline_s)}"
            over = (f": its {pct} upper bound is over it" if math.isfinite(self.upper_s)
                    else f": there is no {pct} upper bound to certify it")
            # "misses" below the prediction's deadline: the errors there run above the
            # prediction (far beyond the runs), so the middle of the interval is over it
            missed = (": predicted over it" if self.predicted_runtime_s > self.deadline_s
                      else ": predicted within it, but more likely over it than not")
            s += {"meets": f" by the {pct} upper bound", "may miss": over, "misses": missed}[verdict]
            if self.chance_meets_deadline is not None:
                # the bound is the two-sided interval's, the (1 + c)/2 quantile: without saying
                # so, "not met at 90% (chance 92%)" reads as a contradiction
                needed = "" if self.meets_deadline else f"; {_meets_needs(self.shown_confidence, pct)}"
                s += f" (chance {format_chance(self.chance_meets_deadline)}{needed})"
        if self.extrapolates:
            s += "; extrapolates"
        return s

    def extrapolation_notes(self) -> list[str]:
        """Where the question leaves the history, in words: ``input size 64 MB is 2.00x the
        runs' largest (32.0 MB)``; a size below the runs' smallest reads as a fraction of it."""
        values = {"input_bytes": self.input_bytes, "executors": self.executors,
                  "executor_cores": self.executor_cores, "executor_memory_mb": self.executor_memory_mb,
                  **self.params}
        notes = []
        for col, d in self.extrapolation.items():
            if not d >= EXTRAPOLATION_NOTED:
                continue
            v, rng = values.get(col), self.training_range.get(col)
            notes.append(f"{_column_words(col)} {d:+.0%}" if v is None or rng is None
                         else beyond_history(col, v, *rng))
        return notes

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: plain floats, ints, strings, lists; non-finite numbers become None."""
        d = asdict(self)
        d["candidates"] = [asdict(c) for c in self.candidates]
        verdicts = self.candidate_verdicts()
        if verdicts is not None:  # the CLI table's words, for readers of the JSON
            for row, verdict in zip(d["candidates"], verdicts):
                row["deadline_verdict"] = verdict
        d["warnings"] = list(self.warnings)
        d["dynamic_allocation"] = {"min_executors": self.dynamic_allocation[0],
                                   "max_executors": self.dynamic_allocation[1]}
        d["knee_reached"] = self.knee_reached
        d["summary"] = self.summary()
        return _json_safe(d)


#: the model's columns in words; a job parameter keeps the name ``--param`` gives it
_WORDS = {"input_bytes": "input size", "executors": "executor count", "executor_cores": "executor cores",
          "executor_memory_mb": "executor memory"}


def _column_words(column: str) -> str:
    return _WORDS.get(column, column)


def flat_size_reason(size_range: tuple[float, float], size: float) -> str:
    """Why a prediction far beyond the runs' sizes is about the largest size's runtime
    (:meth:`~sparkpredict.models.hybrid.JobRuntimeModel.flat_beyond_sizes`), and what to do."""
    lo, hi = size_range
    binary = byte_units_of(size)
    return (f"the runs' sizes ({format_bytes_in(lo, binary)} to {format_bytes_in(hi, binary)}) barely "
            "changed their runtime, so the model has no size term to extrapolate: take the prediction "
            "as a lower bound, and record a run nearer this size")


def flat_size_warning(size_range: tuple[float, float], size: float) -> str:
    """:func:`flat_size_reason` as a whole warning of the advice."""
    return (f"input size {format_bytes_in(size, byte_units_of(size))} is {format_ratio(size / size_range[1])}x "
            f"the runs' largest, yet is predicted to take about as long: {flat_size_reason(size_range, size)}")


def beyond_history(column: str, value: float, lo: float, hi: float) -> str:
    """``input size 64 MB is 2.00x the runs' largest (32.0 MB)``, or ``... is 1/4.00 of the
    runs' smallest (4.00 MB)`` for a value below the range.

    Both sides print in the same units (a size in the system the asked size reads in, memory in
    Spark's binary ones, counts as whole numbers) and the ratio to as many digits as they
    show, so that the ratio is the one a reader works out from the two numbers."""
    if column == "input_bytes":
        binary = byte_units_of(value)
        show = lambda x: format_bytes_in(x, binary)
    elif column == "executor_memory_mb":
        show = lambda x: format_bytes_in(x * 2**20, True)
    elif column in ("executors", "executor_cores"):
        show = lambda x: f"{x:.0f}" if float(x).is_integer() else format_number(x)
    else:
        show = format_number
    if value > hi:
        where = (f"{format_ratio(value / hi)}x the runs' largest ({show(hi)})" if hi > 0
                 else f"above the runs' {show(hi)}")
    else:
        where = (f"1/{format_ratio(lo / value)} of the runs' smallest ({show(lo)})" if value > 0
                 else f"below the runs' {show(lo)}")
    return f"{_column_words(column)} {show(value)} is {where}"


def format_ratio(r: float) -> str:
    """Three significant digits, as many as the sizes beside it show: 1.01, 62.5, 1536."""
    for digits, limit in ((2, 10), (1, 100)):
        if round(r, digits) < limit:
            return f"{r:.{digits}f}"
    return f"{r:.0f}"


def format_runtime(seconds: float) -> str:
    """A runtime or bound of the advice: :func:`format_duration`, except that a bound under a
    tenth of a second (one an interval widened by extrapolation reaches: ``pred * exp(lo)``)
    reads ``<0.1s``: ``0.0s`` claims a run that takes no time at all, and ``68ms`` beside a
    ``<0.1s`` of 40 ms read as the smaller of the two."""
    return "<0.1s" if seconds * 1000 < 99.5 else format_duration(seconds)


def self_checked(model_name: str, n_runs: int | None) -> bool:
    """Whether the model's error (``cv_mape_``, :attr:`Advice.model_cv_mape`) is a self-check
    rather than a cross-validation: the replay of a job with one run can only replay that run and
    compare it with its recorded wall time (``ReplayRuntimeModel``); with two or more runs it
    predicts each from the others."""
    return model_name == "replay" and n_runs == 1


def deadline_verdict(meets: bool | None, chance: float | None, predicted_s: float,
                     deadline_s: float) -> str:
    """"meets" (the upper bound is within the deadline), "may miss" (not certified, but more
    likely in time than not) or "misses" (more likely over it).

    A count whose upper bound is over the deadline but whose chance is 85 % is not one that
    "misses": calling it so would contradict the chance printed beside it."""
    if meets:
        return "meets"
    likely = chance >= 0.5 if chance is not None else predicted_s <= deadline_s
    return "may miss" if likely else "misses"


def context_lines(a: Advice) -> list[str]:
    """What ``sparkpredict suggest`` prints under the advice's summary, as the report shows it
    too: the knee, the dynamic-allocation bounds, and where the question leaves the history."""
    lines = []
    if a.knee_reached is not None and a.knee_executors is not None:  # one count: no curve, no knee
        knee = plural(a.knee_executors, "executor")
        lines.append(f"knee: {knee} (more stop paying off)" if a.knee_reached
                     else f"knee: not reached up to {knee} (more still pay off)")
    lines.append(f"dynamic allocation: minExecutors={a.dynamic_allocation[0]} "
                 f"maxExecutors={a.dynamic_allocation[1]}")
    if a.extrapolates:
        lines.append("extrapolates beyond the history: " + "; ".join(a.extrapolation_notes()))
    return lines


def candidate_table(a: Advice, max_rows: int | None = None) -> tuple[list[str], list[list[str]]]:
    """The candidates in human units, as ``sparkpredict suggest`` prints them and the report
    shows them: (column names, rows of strings). The first column marks the choice with ``>``.

    Past ``max_rows`` candidates, the first, the last, the choice, the knee and an even spread
    between them are kept."""
    pct = format_level(a.shown_confidence)
    price = a.price_per_executor_hour
    money = price is not None
    # a budget is held by the upper bound (budget_runtimes_s): its column shows what each count may cost
    budget = a.budget is not None
    cands = list(a.candidates)
    basis = budget_runtimes_s([c.predicted_runtime_s for c in cands], [c.upper_s for c in cands])
    by_bound = any(math.isfinite(c.upper_s) for c in cands)
    cols = ["", "executors", "runtime", f"{pct} interval", "executor-h"] + (["cost"] if money else []) \
        + ([f"{'cost' if money else 'executor-h'} at {'upper bound' if by_bound else 'prediction'}"]
           if budget else []) \
        + (["deadline", "chance"] if a.deadline_s is not None else [])
    verdicts = a.candidate_verdicts()
    # a candidate without a finite upper bound (a single run's replay) has no interval to show
    no_bound = "none (1 run)" if a.n_runs == 1 else "none"
    shown = list(range(len(cands)))
    if max_rows is not None and len(cands) > max_rows:
        keep = {0, len(cands) - 1} | {round(k * (len(cands) - 1) / (max_rows - 1)) for k in range(max_rows)}
        keep |= {k for k, c in enumerate(cands) if c.executors in (a.executors, a.knee_executors)}
        shown = sorted(keep)
    rows = []
    for k in shown:
        c = cands[k]
        row = [">" if c.executors == a.executors else "", str(c.executors),
               format_runtime(c.predicted_runtime_s),
               (f"{format_runtime(c.lower_s)} - {format_runtime(c.upper_s)}" if math.isfinite(c.upper_s)
                else no_bound),
               format_executor_hours(c.cost_executor_hours)]
        if money:
            row.append(format_amount(c.cost_money) if c.cost_money is not None else "")
        if budget:
            most = c.executors * basis[k] / 3600.0
            row.append(no_bound if not math.isfinite(most) else
                       format_amount(most * price) if price is not None else format_executor_hours(most))
        if a.deadline_s is not None:
            row.append(verdicts[k] if verdicts is not None else "")
            row.append("" if c.chance_meets_deadline is None else format_chance(c.chance_meets_deadline))
        rows.append(row)
    return cols, rows


def budget_runtimes_s(predicted: Any, upper: Any) -> list[float]:
    """The runtimes a budget is judged by, one per candidate: the interval's upper bounds, as a
    deadline is judged; the predicted runtimes where no candidate has a finite bound (a single
    run's replay, which certifies none: every count would be over any budget). One rule for the
    advice's choice and the table's column."""
    up = [float(u) for u in upper]
    return up if any(math.isfinite(u) for u in up) else [float(p) for p in predicted]


def _meets_needs(confidence: float, pct: str) -> str:
    """Why a chance of, say, 92 % is no "meets" at 90 % confidence (``pct``, as the summary
    writes the level): ``'meets' needs 95%, as 5% of runs end above the 90% interval``."""
    tail = (1 - confidence) / 2 * 100  # exact levels, not chances: 2.5 stays 2.5, never rounded down
    return f"'meets' needs {100 - tail:.3g}%, as {tail:.3g}% of runs end above the {pct} interval"


def format_level(confidence: float) -> str:
    """An interval's level in three digits: ``90%``, ``97.5%``, or the ``84.6%`` that 12
    out-of-fold errors cap an interval at; rounded to ``85%`` it would claim more coverage
    than it has."""
    return format_percent(confidence)


def format_chance(p: float) -> str:
    """A chance as a whole percentage; never "100%" or "0%", which no model can promise.

    Rounded down: the verdicts beside it compare the exact chance with whole percentages (50 %,
    (1 + confidence) / 2), and 49.997 % shown as "50%" next to "misses" reads as a contradiction."""
    if p > 0.99:
        return ">99%"
    if p < 0.01:
        return "<1%"
    return f"{math.floor(p * 100 + 1e-9):.0f}%"


def _json_safe(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    if isinstance(x, int) or (hasattr(x, "dtype") and getattr(x.dtype, "kind", "") in "iu"):
        return int(x)
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    return f if math.isfinite(f) else None
