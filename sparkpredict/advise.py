"""How many executors should this run get? :func:`suggest_executors` -> :class:`Advice`.

The advice asks the job's fitted whole-job runtime model (:mod:`sparkpredict.models.hybrid`)
for the runtime and its interval at every candidate executor count, costs each candidate in
executor-hours (and money, given a price), and picks one by an objective:

``"cost"``
    the cheapest count whose interval's *upper bound* meets the deadline (so the deadline is met
    with the requested confidence); without a deadline, the cheapest count.
``"time"``
    the fastest count (lowest predicted runtime), within ``budget`` when one is given, judged
    as the deadline is: by the interval's upper bound (executors x ``upper_s``), so the budget
    holds with the requested confidence; counts within :data:`SAME_SPEED` (2 %) of the fastest
    count as equally fast, and the cheapest of them is given.
``"knee"``
    where more executors stop paying off: the smallest count E such that going from E to any
    larger candidate E' has *marginal efficiency* ``(T(E)/T(E') - 1) / (E'/E - 1)`` below
    ``knee_efficiency`` (default 0.5). 1 means perfect linear scaling, 0 no gain at all; so
    beyond the knee each added executor buys less than half its share of speed-up.

With a deadline, candidates whose upper bound misses it are set aside for every objective;
when no candidate meets it, the advice says so (``meets_deadline=False``) and gives the count
most likely to make it (chances compared to 4 decimals, a count at 50 % or more before one under
it, as the table's verdicts read; ties: the lower upper bound, then fewer executors), or, when no count is
even predicted within it nor likelier to make it than not, the fastest by the upper bound (the
likeliest count would then be the one whose interval is widest), as for a model that states no
chance. A model without any
finite upper bound (the replay of a job with a single run) certifies no deadline: the objective
then chooses among the counts predicted within it, and the advice says none is certified. Each
candidate also carries the chance that one run meets the deadline (``chance_meets_deadline``),
read from the same error distribution as the interval.

Nothing here starts a JVM or imports pyspark; with ``models=`` given (a dict or a model folder)
nothing imports pandas either, so driver code and the CLI stay fast.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

# the advice's data types live in .advice; their names stay importable from here
from .advice import (
    EXTRAPOLATION_NOTED,
    Advice,
    Candidate,
    beyond_history,
    budget_runtimes_s,
    flat_size_warning,
    format_chance,
    format_level,
    self_checked,
)
from .advice_args import (
    OBJECTIVES,
    arg_name,
    check_params,
    check_suggest_args,
    give,
)
from .advice_cache import _CACHE  # noqa: F401  (tests inspect it)
from .advice_source import HistorySource, check_param_names
from .units import format_amount, format_duration, format_number, plural

if TYPE_CHECKING:
    import numpy as np

__all__ = ["OBJECTIVES", "SAME_SPEED", "UNRELIABLE_CV_MAPE", "WIDE_INTERVAL", "Advice", "Candidate",
           "candidate_grid", "check_params", "format_chance", "knee_index", "suggest_executors"]
log = logging.getLogger(__name__)

#: Candidate counts above this many are thinned to a geometric grid (prediction stays O(grid)).
_MAX_GRID = 256
#: Default ceiling on the candidate range: twice the largest count in the history, capped.
_MAX_DEFAULT_CAP = 1000
#: Runtimes within 2 % of the fastest count as equally fast (no model resolves less): the
#: cheapest of them is "the fastest" -- no paying 50 % more for a predicted 1 % speed-up.
SAME_SPEED = 0.02
#: Runtimes and upper bounds within this fraction of each other are one figure when no count
#: meets the deadline (float noise, not a model's finding): the fewest executors then decide.
TIE = 1e-9
#: An upper bound beyond this many times the prediction means the history cannot answer the
#: question; the advice then says which run would narrow it.
WIDE_INTERVAL = 10.0
#: A cross-validated error above this is more than repeats of one application on a quiet
#: cluster scatter (C3O's jobs: 5-15 %); the advice then says what usually causes it. A fit that
#: minimises relative error stays below 50 % even on two applications 5x apart (it follows the
#: faster), so the bar sits lower: this repository's wordcount history (42 %, repeats 5x apart
#: on a shared 2-core machine) is above it, its sqljoin and sort histories (24 %, 17 %) below.
UNRELIABLE_CV_MAPE = 0.35


def candidate_grid(lo: int, hi: int, seen: Sequence[int] = ()) -> list[int]:
    """Every count in [lo, hi], or a geometric grid of ~256 counts (plus the counts seen)."""
    if hi - lo + 1 <= _MAX_GRID:
        return list(range(lo, hi + 1))
    ratio = (hi / lo) ** (1.0 / (_MAX_GRID - 1))
    grid = {lo, hi, *(s for s in seen if lo <= s <= hi)}
    x = float(lo)
    while x < hi:
        grid.add(int(round(x)))
        x *= ratio
    return sorted(grid)


# ---- the choice ---------------------------------------------------------------------------------
def knee_index(executors: Sequence[float] | np.ndarray, runtime_s: Sequence[float] | np.ndarray,
               efficiency: float = 0.5) -> int:
    """Index of the knee: the first E from which no larger E' has marginal efficiency >= ``efficiency``.

    Marginal efficiency of going from E to E' is ``(T(E)/T(E') - 1) / (E'/E - 1)``.
    """
    import numpy as np

    e = np.asarray(executors, dtype=float)
    t = np.asarray(runtime_s, dtype=float)
    for i in range(len(e) - 1):
        gain = (t[i] / t[i + 1:] - 1.0) / (e[i + 1:] / e[i] - 1.0)
        if not np.any(gain >= efficiency):
            return i
    return len(e) - 1


def _fastest(mask, speed, cost, e) -> int:
    """Cheapest of the candidates in ``mask`` within SAME_SPEED of the lowest ``speed``."""
    import numpy as np

    near = mask & (speed <= speed[mask].min() * (1.0 + SAME_SPEED))
    idx = np.flatnonzero(near)
    return int(idx[np.lexsort((e[idx], cost[idx]))[0]])


def _first_of_ties(ranks, e) -> int:
    """Index of the candidate lowest in each of ``ranks`` in turn, then with the fewest executors.
    Values within TIE of the lowest tie: a model that predicts every count alike (an Amdahl fit
    whose parallel part is 0) gives runtimes one unit in the last place apart, and exact keys
    had that float noise advise 3 executors at 3x the cost of 1, every figure shown the same."""
    import numpy as np

    idx = np.arange(len(e))
    for rank in ranks:
        r = np.asarray(rank, dtype=float)[idx]
        low = r.min()
        idx = idx[r <= low + TIE * abs(low)] if np.isfinite(low) else idx[r == low]
    return int(idx[np.argmin(np.asarray(e, dtype=float)[idx])])


def _choose(objective: str, e, t, up, cost, meets, budget_ok, knee_i: int,
            chance=None, in_time=None) -> tuple[int, bool | None]:
    """Index of the chosen candidate and whether the deadline is met (None without deadline);
    ``in_time``: the counts whose predicted runtime is within the deadline."""
    import numpy as np

    n = len(e)
    feasible = np.ones(n, bool) if meets is None else meets.copy()
    if meets is not None and not feasible.any() and in_time is not None and in_time.any() \
            and not np.isfinite(up).any():
        # No finite upper bound anywhere (a single run's replay): no chance ranks the counts,
        # and "most likely" would favour the count furthest from the run on a guessed scaling.
        # The objective chooses among the counts predicted in time, none of them certified.
        return _choose(objective, e, t, up, cost, in_time, budget_ok, knee_i)[0], False
    if meets is not None and not feasible.any():
        # Nothing meets the deadline. When some count is predicted within it or more likely
        # to make it than not, the count most likely to make it (no cost tolerance here:
        # making the deadline comes first). Else the fastest at the confidence asked, the
        # lowest upper bound: below every prediction the likeliest count is the one the model
        # knows least about (its interval reaches furthest down), 24 executors predicted at
        # 8m51s over 12 at 3m57s against 3 minutes. Ties: the lowest upper bound, then (every
        # bound infinite: a single run's replay) the lowest predicted runtime, then fewer executors.
        # The side of 50 % ranks first: at 4 decimals 49.997 % ties 50 %, and the tie gave a
        # count the table calls "misses" over one it calls "may miss" (deadline_verdict).
        ranks = ((np.asarray(chance) < 0.5, -np.round(chance, 4), up, t)
                 if _likeliest_rule(chance, in_time) else (up, t))
        return _first_of_ties(ranks, e), False
    pool = feasible & budget_ok
    if objective == "knee" and feasible[knee_i]:
        i = knee_i
    elif objective == "time" and not pool.any():
        # nothing within budget (and deadline): the deadline wins, and of the counts meeting it
        # the one likeliest to fit the budget, the lowest upper bound of cost (the fastest
        # spent most past it), warned below
        idx = np.flatnonzero(feasible)
        spend = e * np.asarray(budget_runtimes_s(t, up))
        i = int(idx[np.lexsort((e[idx], cost[idx], spend[idx]))[0]])
    elif objective == "time":
        i = _fastest(pool, t, cost, e)
    else:
        idx = np.flatnonzero(feasible)
        i = int(idx[np.lexsort((e[idx], cost[idx]))[0]])
    return i, (None if meets is None else True)


def _likeliest_rule(chance, in_time) -> bool:
    """Whether a deadline no count meets is given the count most likely to make it (else the
    fastest by the upper bound, :func:`_choose`): some count is predicted within it, or more
    likely to make it than not."""
    import numpy as np

    if chance is None:
        return False
    return bool((np.asarray(chance) >= 0.5).any()) or (in_time is not None and bool(np.asarray(in_time).any()))


def default_max_executors(src: HistorySource, lo: int = 1) -> int:
    """The candidates' ceiling when none is given: twice the history's largest count, at least 8,
    and twice ``lo`` (a --min-executors above the history's counts alone left one candidate)."""
    seen_max = src.max_executors_seen() or 4
    return min(max(2 * seen_max, 8, 2 * lo), max(lo, _MAX_DEFAULT_CAP))


def suggest_executors(job: str, input_bytes: float | str, *,
                      deadline_s: float | str | None = None, objective: str = "cost",
                      executor_cores: int | None = None, executor_memory_mb: int | None = None,
                      min_executors: int = 1, max_executors: int | None = None,
                      price_per_executor_hour: float | None = None, budget: float | None = None,
                      confidence: float = 0.9, knee_efficiency: float = 0.5,
                      executor_counts: Sequence[int] | str | None = None,
                      params: Mapping[str, float | int | str] | None = None,
                      store: str | os.PathLike[str] | None = None,
                      models: Mapping[str, Any] | str | os.PathLike[str] | None = None) -> Advice:
    """Advise how many executors a run of ``job`` on ``input_bytes`` should get.

    Parameters
    ----------
    job : str
        The job key the history records (``spark.sparkpredict.job``, default the app name).
    input_bytes : int or str
        Input size in bytes, or a human size such as ``"300GB"`` or ``"1.5TiB"``.
    deadline_s : float or str, optional
        Deadline in seconds or as ``"45m"``/``"1h30m"``; met when the interval's upper bound at
        ``confidence`` is within it.
    objective : {"cost", "time", "knee"}
        See the module docstring.
    executor_cores : int, optional
        Cores per executor; default: the job's most recent run (or the model's training data).
    executor_memory_mb : int or str, optional
        Memory per executor: a number of MiB, or a string as ``spark.executor.memory`` reads it
        (``"4g"``, ``"512m"``; a bare number is MiB), as ``--executor-memory`` takes it; default:
        the job's most recent run (or the model's training data).
    min_executors, max_executors : int
        Range of candidate counts; ``max_executors`` defaults to twice the largest count in
        the history (at least 8 and twice ``min_executors``, at most 1000).
    price_per_executor_hour : float, optional
        Price of one executor for one hour; adds ``cost_money``.
    budget : float, optional
        For ``objective="time"``: the most the run may cost, in money when a price is given,
        else in executor-hours; held at ``confidence`` as the deadline is, by the interval's
        upper bound (executors x ``upper_s``). With another objective it does not steer the
        choice; the advice warns when the chosen count may cost more.
    confidence : float
        Coverage of the runtime interval (default 0.9).
    knee_efficiency : float
        Marginal efficiency below which more executors stop paying off (``"knee"``), in (0, 1]:
        1 is perfect linear scaling.
    executor_counts : sequence of int or str, optional
        Explicit candidate counts (e.g. the cluster sizes you can get) instead of the range;
        a string lists them comma-separated (``"2,4,8"``), as ``--executor-counts`` does.
    params : mapping of str to number, optional
        The run's job parameters beyond its input size (``{"iterations": 25}``), for a history
        whose runs declared them (``spark.sparkpredict.param.<name>``, ``submit --param``).
        A parameter the history declares but ``params`` omits is taken from the latest run,
        with a warning; one the history never declared is an error.
    store : path, optional
        The history store (default: ``$SPARKPREDICT_STORE`` or ``~/.sparkpredict/store``).
    models : dict or path, optional
        Fitted models, ``{job: model}`` or a folder written by ``sparkpredict fit``; with a
        store as well, the store still supplies the memory / spill warnings.

    Returns
    -------
    Advice

    Raises
    ------
    InputError
        Unparseable or non-positive size or deadline, unknown objective, max < min,
        ``knee_efficiency`` outside (0, 1].
    UnknownJobError
        No model and no runs for ``job`` (the message lists the jobs that exist).

    Examples
    --------
    >>> from sparkpredict import suggest_executors
    >>> a = suggest_executors("nightly-etl", "300GB", deadline_s="45m")   # doctest: +SKIP
    >>> a.executors, a.upper_s <= 45 * 60                                  # doctest: +SKIP
    (12, True)
    >>> print(a.summary())                                                 # doctest: +SKIP
    """
    import numpy as np

    checked = check_suggest_args(
        job, input_bytes, deadline_s=deadline_s, objective=objective, executor_cores=executor_cores,
        executor_memory_mb=executor_memory_mb, min_executors=min_executors, max_executors=max_executors,
        price_per_executor_hour=price_per_executor_hour, budget=budget, confidence=confidence,
        knee_efficiency=knee_efficiency, executor_counts=executor_counts, params=params, models=models)
    size, deadline, confidence, lo, hi = (checked.input_bytes, checked.deadline_s, checked.confidence,
                                          checked.min_executors, checked.max_executors)
    price, budget_v, knee_eff = checked.price_per_executor_hour, checked.budget, checked.knee_efficiency
    cores, mem, counts, left_out = (checked.executor_cores, checked.executor_memory_mb,
                                    checked.executor_counts, checked.left_out)
    given_params = checked.params
    src = HistorySource.resolve(job, store=store, models=models, params=given_params)
    model = src.model
    known = src.param_names()
    check_param_names(job, given_params, known)  # a model folder's, or one the store's lags
    cores = cores or src.default_column("executor_cores")
    mem = mem or src.default_column("executor_memory_mb")
    default_top = counts is None and hi is None
    if counts is None:
        top = hi if hi is not None else default_max_executors(src, lo)
        counts = candidate_grid(lo, top, src.executor_counts_seen())

    e = np.asarray(counts, dtype=float)
    X = src.query(size, e, cores, mem, given_params)
    used = {p: float(np.asarray(X[p], dtype=float)[0]) for p in known}
    pred = model.predict_interval(X, confidence)
    t = np.maximum(np.asarray(pred["predicted_runtime_s"], dtype=float), 0.0)
    low = np.maximum(np.asarray(pred["lower_s"], dtype=float), 0.0)
    up = np.maximum(np.asarray(pred["upper_s"], dtype=float), t)
    cost = e * t / 3600.0
    money = cost * price if price is not None else None
    meets = None if deadline is None else up <= deadline
    chance = None
    if deadline is not None and hasattr(model, "chance_within"):
        chance = np.clip(np.asarray(model.chance_within(X, deadline), dtype=float), 0.0, 1.0)
    most = getattr(model, "max_confidence", None)
    from .models.estimator import without_interval  # numpy only, loaded with the model

    no_interval = without_interval(model)
    if no_interval:
        # No out-of-fold error to bound a run by (a single kind fitted on too few runs to
        # cross-validate): its "0% interval" of no width, and a chance of 49 % at every count
        # read from it, looked like measured figures. As for a single run: no bound, no chance.
        low, up, chance = np.zeros(len(e)), np.full(len(e), np.inf), None
        meets = None if deadline is None else up <= deadline
    if budget_v is not None:
        # the budget holds at the requested confidence, as the deadline does: by the upper bound
        spend = e * np.asarray(budget_runtimes_s(t, up)) / 3600.0 * (price if price is not None else 1.0)
        budget_ok = spend <= budget_v
    else:
        budget_ok = np.ones(len(e), bool)
    knee_i = knee_index(e, t, knee_eff)
    in_time = None if deadline is None else t <= deadline
    i, met = _choose(objective, e, t, up, cost, meets, budget_ok, knee_i, chance, in_time)
    # which fallback rule _choose followed, for the warnings that name it
    likeliest = _likeliest_rule(chance, in_time)

    ratio = None
    if mem:
        ratio = size / (src.memory_holders(e) * mem * 2**20)
    rows = tuple(
        Candidate(int(e[k]), float(t[k]), float(low[k]), float(up[k]), float(cost[k]),
                  None if money is None else float(money[k]),
                  None if meets is None else bool(meets[k]),
                  None if ratio is None else float(ratio[k]),
                  None if chance is None else float(chance[k]))
        for k in range(len(e)))

    extr = src.extrapolation(X, i)
    warnings = src.warnings(size, int(e[i]), mem, ratio[i] if ratio is not None else None, cores)
    if left_out:
        warnings.append(f"{arg_name('executor_counts')} {', '.join(map(str, left_out))}: left out, "
                        f"as only counts {checked.within()} were asked for")
    shown = None  # the interval's level, where the model supports less than the one asked for
    if no_interval:
        # with a deadline _no_bound_warning below says it; of a single run, the summary and
        # the too-few-runs warning do ("no 90% interval from 1 run")
        if deadline is None and src.n_runs != 1:
            warnings.append(_no_interval_warning(job, src.model.interval_errors(), confidence))
    elif most is not None and confidence > (top := most()):
        shown = top
        errors = src.model.interval_errors()
        warnings.append(f"the model's {plural(errors, 'out-of-fold error')} cannot support the "
                        f"{format_level(confidence)} interval asked for, only one up to {format_level(top)}: the "
                        f"interval shown is that one, and no stated chance exceeds "
                        f"{format_chance(errors / (errors + 1))} (more runs of the job support a higher level)")
    level = confidence if shown is None else shown
    flat = getattr(src.model, "flat_beyond_sizes", None)
    if flat is not None and bool(flat(X)[i]):
        warnings.append(flat_size_warning(src.ranges["input_bytes"], size))
    # a stage-level model's plan follows a recorded run: what it cannot foresee at this size
    # (a join adaptive execution will likely plan otherwise)
    plan_notes = getattr(src.model, "plan_warnings", None)
    if plan_notes is not None:  # the chosen row's alone: each row looks up its reference run
        warnings.extend(plan_notes({k: np.asarray(v)[i:i + 1] for k, v in X.items()})[0])
    warnings.extend(_flat_param_warnings(model, X, i, known, used, extr, src.ranges, t[i]))
    assumed = [p for p in known if p not in given_params]
    if assumed:
        warnings.append("job parameter(s) not given, taken from the history: "
                        + ", ".join(f"{p}={format_number(used[p])}" for p in assumed)
                        + " (pass params= / --param NAME=VALUE)")
    if budget_v is not None and not budget_ok[i]:
        unit = format_amount if money is not None else (lambda v: f"{format_amount(v)} executor-h")
        scale = price if price is not None else 1.0
        # the budget's unit once: executor-hours, or money in whatever currency the price is in
        budget_text = format_number(budget_v) + (" executor-h" if money is None else " (in the price's currency)")
        # spend: what the budget was judged by (the upper bound, or the prediction without one)
        how = (f"up to {unit(spend[i])} by the {format_level(level)} interval's upper bound"
               if np.isfinite(up).any() else unit(spend[i]))
        if objective == "time" and meets is not None and not met:
            # the deadline's fallback came first, chosen without regard to the budget
            which = ("chosen among the counts predicted within the deadline" if not np.isfinite(up).any()
                     else "most likely to make the deadline" if likeliest
                     else "fastest by its upper bound")
            warnings.append(f"the count given, the one {which}, costs {how}, over "
                            f"the budget {budget_text} (predicted {unit(cost[i] * scale)}): "
                            "with no count meeting the deadline, the budget did not steer the choice")
        elif objective == "time":
            also = " and meets the deadline" if meets is not None and met else ""
            warnings.append(f"no candidate fits the budget {budget_text}{also} at "
                            f"{format_level(level)} confidence; the {'count meeting the deadline' if also else 'count'} "
                            f"likeliest to fit it is given: it costs {how} (predicted "
                            f"{unit(cost[i] * scale)})")
        else:
            # a budget only steers "time"; given with another objective it must not pass unremarked
            warnings.append(f"the advised count costs {how}, over the budget {budget_text}; "
                            f"the budget limits the choice only for objective 'time' (this advice: {objective!r})")
    if deadline is not None and meets is not None and not met and not np.isfinite(up).any():
        warnings.append(_no_bound_warning(job, src.n_runs, deadline, level))
    elif deadline is not None and meets is not None and not met:
        # a model that states no chance (no chance_within) ranks no count as likeliest, though
        # some may be predicted within the deadline: "none is even predicted within it" was false
        given = ("the count most likely to make it is given" if likeliest else
                 "the model states no chance of making it, so the fastest by that upper bound is given"
                 if chance is None and in_time is not None and bool(in_time.any()) else
                 "none is even predicted within it or likelier to make it than not, so the fastest by "
                 "that upper bound is given")
        no_count = (f"no executor count in {int(e[0])}..{int(e[-1])} meets the deadline "
                    f"{format_duration(deadline)} at {format_level(level)} confidence; {given}")
        if default_top and i == len(e) - 1 and e[-1] < _MAX_DEFAULT_CAP:
            # the range's end was ours, not the user's: a larger count may be what it takes
            no_count += (f". {int(e[-1])} is the default end of the range: "
                         f"{give('max_executors', str(2 * int(e[-1])))} asks about more, "
                         "further beyond the history")
        warnings.append(no_count)
    if t[i] > 0 and np.isfinite(up[i]) and up[i] > WIDE_INTERVAL * t[i]:
        warnings.append(_wide_interval_warning(up[i] / t[i], level, extr, src.ranges, X, i))
    # a single run's replay reproduces that run (its self-check): there are no runs to disagree
    if (src.cv_mape is not None and src.cv_mape > UNRELIABLE_CV_MAPE
            and not self_checked(src.model_name, src.n_runs)):
        import shlex  # the command is pasted into a shell: a job named "Spark shell" is one word

        above = src.runs_above_model()
        named = "" if not above else (" (the runs furthest above the model: "
                                      + ", ".join(f"{r} {x:.1f}x" for r, x in above)
                                      + f"; `sparkpredict explain --job {shlex.quote(job)}` explains each)")
        warnings.append(f"the model's cross-validated error is {src.cv_mape:.0%}: the runs of {job} "
                        "differ far more than their input sizes and executor counts explain. If "
                        "they are different applications under one job name, give each its own "
                        "(spark.sparkpredict.job, or `sparkpredict ingest --job NAME` for event logs, "
                        "into a fresh store for logs already ingested); if a setting changed between them, record it as "
                        "a job parameter (spark.sparkpredict.param.NAME); if other work shared the "
                        f"cluster, `sparkpredict explain RUN_ID` says which runs it slowed{named}")
    da = _dynamic_allocation(e, t, deadline, i, knee_i, lo, budgeted=budget_v is not None)
    if src.dynamic_allocation_used():
        warnings.append(f"the history used dynamic allocation: set spark.dynamicAllocation."
                        f"minExecutors={da[0]} and maxExecutors={da[1]}")
    return Advice(
        job=job, input_bytes=size, objective=objective, confidence=float(confidence),
        executors=int(e[i]), predicted_runtime_s=float(t[i]), lower_s=float(low[i]),
        upper_s=float(up[i]), cost_executor_hours=float(cost[i]),
        cost_money=None if money is None else float(money[i]), deadline_s=deadline,
        meets_deadline=met, candidates=rows, model_name=src.model_name, model_source=src.source,
        model_cv_mape=src.cv_mape, n_runs=src.n_runs,
        extrapolates=any(v >= EXTRAPOLATION_NOTED for v in extr.values()),
        extrapolation=extr, warnings=tuple(warnings), dynamic_allocation=da,
        knee_executors=int(e[knee_i]), executor_cores=cores, executor_memory_mb=mem,
        price_per_executor_hour=price, budget=budget_v, params=used,
        chance_meets_deadline=None if chance is None else float(chance[i]),
        training_range=dict(src.ranges), interval_confidence=None if shown is None else float(shown),
        input_size_used=not src.sizes_unknown())


def _flat_param_warnings(model: Any, X: Mapping[str, Any], i: int, known: Sequence[str],
                         used: Mapping[str, float], extr: Mapping[str, float],
                         ranges: Mapping[str, tuple[float, float]], predicted: float) -> list[str]:
    """For a job parameter beyond the runs' values whose prediction is the one at the runs'
    edge: the equations take only size and executors, and a parameter enters through the
    correction's trees, flat beyond the values they were grown on. 80 iterations asked of runs
    of 10 and 20 was predicted as 20, its lower bound below 20's, with only "extrapolates" said."""
    import numpy as np

    out = []
    for p in known:
        if not extr.get(p, 0.0) >= EXTRAPOLATION_NOTED or p not in ranges or predicted <= 0:
            continue
        lo, hi = ranges[p]
        edge = min(max(used[p], lo), hi)
        row = {k: np.asarray(v)[i:i + 1] for k, v in X.items()}
        row[p] = np.array([edge])
        if abs(float(np.asarray(model.predict(row), dtype=float)[0]) - predicted) <= 0.01 * predicted:
            out.append(f"job parameter {beyond_history(p, used[p], lo, hi)}, yet is predicted as at "
                       f"{format_number(edge)}: the model learns a parameter's effect only within the "
                       f"runs' values, so take the prediction as for {p}={format_number(edge)}, and "
                       "record a run nearer this value")
    return out


def _no_interval_warning(job: str, errors: int, confidence: float) -> str:
    """Why the advice has no interval at all (a model fitted with no cross-validation), and
    what gives it one."""
    # numpy only, and loaded with the model already
    from .models.selection import CV_MIN_RUNS

    return (f"no {format_level(confidence)} interval: the model of {job} measured "
            f"{plural(errors, 'out-of-fold error')}, too few to bound a run's runtime at any level "
            f"(its runs are too few to predict any from the others). Record more runs of the job "
            f"(~{CV_MIN_RUNS} or more, at two or more executor counts) for an interval")


def _no_bound_warning(job: str, n_runs: int | None, deadline: float, confidence: float) -> str:
    """Why no count can meet ``deadline`` when the model has no finite upper bound anywhere
    (the replay of a job with a single run), and what gives it one."""
    why = ("one run says nothing about how much the runtime varies from run to run (repeats of "
           "one application can differ several-fold)" if n_runs == 1 else
           "the model measured no error (no run could be predicted from the others)")
    return (f"no deadline can be certified from {'the only run' if n_runs == 1 else 'the runs'} "
            f"of {job}: {why}, so no count has a {format_level(confidence)} upper bound to hold against "
            f"{format_duration(deadline)}. Record more runs of the job (sparkpredict submit, or "
            "ingest their event logs; ~10 at several executor counts and input sizes) for an interval")


def _wide_interval_warning(width: float, confidence: float, extr: Mapping[str, float],
                           ranges: Mapping[str, tuple[float, float]], X: Mapping[str, Any], i: int) -> str:
    import numpy as np

    s = (f"the {format_level(confidence)} interval reaches {width:,.0f}x the predicted runtime: the history "
         "cannot pin this run down")
    col = max(extr, key=lambda k: extr[k]) if extr else None
    # inside the history, or just past its edge (16 MB against runs of 15.99 MB): not the cause
    if col is None or not extr[col] >= EXTRAPOLATION_NOTED or col not in ranges or col not in X:
        return s + "; more runs of the job would narrow it"
    where = beyond_history(col, float(np.asarray(X[col], dtype=float)[i]), *ranges[col])
    return f"{s} (its {where}); a run nearer it would narrow the interval"


def _dynamic_allocation(e, t, deadline: float | None, i: int, knee_i: int, lo: int,
                        budgeted: bool = False) -> tuple[int, int]:
    """(min, max) for dynamic allocation.

    max: the chosen count, or the knee when that is larger (more executors than the knee idle
    for little gain). A knee at the largest candidate was not reached (more still paid off up
    to the range's end, which is no reason to allow all of it), and a budget bounds what may be
    spent: then max is the chosen count. min: the smallest count whose *typical*
    (point-predicted) runtime meets the deadline, capped by the choice; without a deadline,
    the smallest candidate (``min_executors``, or the fewest of ``executor_counts``: a bound
    below every count asked about was advice about counts never weighed).
    """
    import numpy as np

    reached = knee_i < len(e) - 1
    hi = int(max(e[i], e[knee_i])) if reached and not budgeted else int(e[i])
    if deadline is None:
        return max(int(lo), int(e[0])), hi
    ok = np.flatnonzero(t <= deadline)
    low = int(e[ok[0]]) if len(ok) else int(e[i])
    return min(low, int(e[i])), hi

