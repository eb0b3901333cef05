"""The slowdown monitor's explaining side: one run's slowdown against its job's clean runs and
its cause (:func:`explain_run`, :class:`Explanation`), and a job's runs furthest above its
runtime model, each explained (:func:`slowest_runs`).

How the monitor works is told in :mod:`sparkpredict.monitor`, which re-exports these names; the
model they use is trained in :mod:`sparkpredict.monitor_training`.
"""
from __future__ import annotations

import math
import numbers
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import monitor_baseline as MB
from .errors import DegenerateDataError, InputError, UnknownJobError
from .features.interference import host_footprint
from .models.degradation import DegradationModel, run_degradation, run_estimate, shapley
from .monitor_training import _stages_and_baselines, default_model
from .units import format_duration, format_percent, plural

_RECORD_FIRST = "record runs first (sparkpredict submit, demo or ingest), then explain them"

if TYPE_CHECKING:
    import pandas as pd

    from .store.io import Store

__all__ = [
    "CAUSE_MIN_SLOWDOWN",
    "MATCHED_SHARE_WARN",
    "QOS_THRESHOLDS",
    "SHORTER_THAN_TRAINED",
    "UNRANKED",
    "Explanation",
    "SlowRun",
    "StageImpact",
    "explain_run",
    "slowest_runs",
    "unranked_runs",
]

QOS_THRESHOLDS = (0.05, 0.10, 0.20)
#: An estimated slowdown below this is not told apart from noise (the estimator's error on clean
#: runs is about 3 %, benchmarks/RESULTS.md), so no cause is named for it.
CAUSE_MIN_SLOWDOWN = 0.05
#: A second group whose share of the slowdown is within this of the main cause's is named beside
#: it ("nearly tied"): the Shapley split of one run's estimate does not tell 47 % from 45 % apart.
NEAR_TIE = 0.10
#: Below this share of a run's stage time with a counterpart in the job's clean runs, the
#: comparison covers too little of the run to stand for it, and the explanation says so.
MATCHED_SHARE_WARN = 0.5
#: A run whose stages took less than 1/this of the shortest training run's is outside what the
#: monitor's model learnt (the bundled dataset's runs: 6.6 s of stage time or more, 12-35 s of
#: wall time): its estimate is flagged as an extrapolation, and a cause is named only for a
#: slowdown its clean runs confirm.
SHORTER_THAN_TRAINED = 2.0
#: A run whose time outside its stages exceeds its clean runs' median by more than this many
#: seconds and this share of that median is told so: explain compares stages, a runtime model
#: the wall time.
OUTSIDE_STAGES_MIN_S = 5.0
OUTSIDE_STAGES_SHARE = 0.5


@dataclass
class StageImpact:
    """One stage of an explained run."""

    stage_id: int
    name: str
    actual_ms: float
    expected_ms: float | None
    degradation: float | None
    #: the model's estimate for the stage: the run's physical prior, summed over the whole run's
    #: tasks (:meth:`DegradationModel._prior`: stages submitted together share the slots, so a
    #: stage's own change is noisy), plus the stage's share of the boosted correction. Where the
    #: correction's weight is 0 (``DegradationModel.correction_``, as the bundled dataset's
    #: cross-validation chose), it is the run's ``Explanation.estimated_degradation`` on every
    #: stage: only ``degradation``, measured, tells the stages apart there
    estimated_degradation: float


@dataclass
class Explanation:
    """What :func:`explain_run` found. Degradations are fractions (0.25 = 25 % slower)."""

    run_id: str
    job: str
    actual_ms: float
    expected_ms: float | None
    degradation: float | None
    estimated_degradation: float
    contributions: dict[str, float]
    shares: dict[str, float]
    main_cause: str | None
    main_share: float
    #: per QoS threshold (0.05, 0.10, 0.20): True when the run violated it, slower by more
    qos: dict[float, bool]
    threshold: float
    violated: bool
    clean_runs: int
    label: str | None
    stages: list[StageImpact]
    #: who took the cores Spark's tasks waited for, from the host counters (probabilities over
    #: GROUPS); None when the run has no host samples or the model no culprit part
    culprit: dict[str, float] | None = None
    #: the host footprints the culprit reads, as changes over the clean runs (:func:`host_footprint`)
    footprint: dict[str, float] | None = None
    #: share of the run's stage time whose stage has a counterpart in another clean run of the
    #: job (same call site and task count); the measured figures cover this part only
    matched_share: float = 1.0
    warnings: list[str] = field(default_factory=list)
    #: the run is far shorter than the monitor's training runs (:data:`SHORTER_THAN_TRAINED`):
    #: its estimate from metrics is an extrapolation
    too_short: bool = False
    #: the estimate named a cause, but the run is too short for it and its clean runs measured
    #: no slowdown (under :data:`CAUSE_MIN_SLOWDOWN`), or only runs of other setups were there to
    #: measure it against: none is named
    cause_withheld: bool = False
    #: how its ``clean_runs`` were chosen: "labelled" (labelled ``none``), "same setup" (a job
    #: without labels, or a labelled one with no other run labelled ``none``: its runs of this
    #: run's setup not labelled as interfered with) or "any setup" (too few of those: all such runs)
    baseline: str = MB.LABELLED
    #: this run's setup, which the "same setup" runs share ("" when labelled)
    baseline_setup: str = ""
    #: the run's wall time (application start to end), of which ``actual_ms`` is the stages' part
    wall_ms: float | None = None
    #: what Spark ran again after losing executors in the run ("lost 1 executor, 2 stages ran
    #: again"; :func:`_recovered`), "" when nothing: its time is in the run's, and no interference
    recovery: str = ""

    def summary(self) -> str:
        """One line, as :meth:`Advice.summary <sparkpredict.advice.Advice.summary>` gives: for a
        driver's log after the run."""
        def pct(x: float) -> str:
            return f"{x * 100:+.1f}%"

        measured = "no clean run to compare with" if self.degradation is None \
            else f"{pct(self.degradation)} against {self.compared_with()}"
        if self.main_cause:
            cause = f"main cause {self.main_cause} ({self.main_share:.0%} of the slowdown{self.runner_up()})"
        elif self.cause_withheld:
            cause = f"no cause named: {self.withheld_because()}"
        else:
            cause = f"its metrics name no cause ({self.no_cause()})"
        verdict = "VIOLATED" if self.violated else "met"
        # the run's own recovery, beside a cause its rerun tasks' metrics may only resemble
        recovery = f"; Spark {self.recovery}: a recovery, no interference" if self.recovery else ""
        return (f"run {self.run_id} (job {self.job}): {measured}, estimated from metrics "
                f"{pct(self.estimated_degradation)}; {cause}{recovery}; QoS at "
                f"{format_percent(self.threshold)} {verdict}")

    def compared_with(self, clean: str = "its clean runs") -> str:
        """The runs the run is measured against, in words: ``clean`` for labelled clean runs."""
        return {MB.SAME_SETUP: "its runs of the same setup", MB.ANY_SETUP: "its runs of any setup"}.get(
            self.baseline, clean)

    def runner_up(self) -> str:
        """``", nearly tied with cpu (45%)"`` when another group's share is within
        :data:`NEAR_TIE` of the main cause's, else ``""``: "memory (47%)" alone, above cpu's
        45 %, named one cause where the estimate cannot tell two apart."""
        if not self.main_cause:
            return ""
        rest = sorted(((v, g) for g, v in self.shares.items() if g != self.main_cause), reverse=True)
        if not rest or self.main_share - rest[0][0] > NEAR_TIE:
            return ""
        return f", nearly tied with {rest[0][1]} ({rest[0][0]:.0%})"

    def no_cause(self) -> str:
        """Why no cause is named although none was withheld, in words. A run measured slower
        than its threshold is said to be slowed by something its task metrics do not show, so
        that "VIOLATED" beside "no cause" reads as a finding, not a contradiction."""
        under = f"an estimated slowdown under {CAUSE_MIN_SLOWDOWN:.0%}"
        if self.degradation is not None and self.degradation > self.threshold:
            return (f"{under}, yet it measured {self.degradation * 100:+.1f}%: the time went where "
                    "the task metrics do not look, such as fewer executors or cores than its "
                    "clean runs had, scheduler delay or a larger input")
        return under

    def withheld_because(self) -> str:
        """Why :attr:`cause_withheld`, in words."""
        if self.baseline == MB.ANY_SETUP:
            return "compared only with runs of other setups, and too short for the monitor's model"
        return "not slower than its clean runs, and too short for the monitor's model"

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        d = asdict(self)
        d["qos"] = {f"{k:.2f}": v for k, v in self.qos.items()}
        return d


def _check_threshold(threshold: object, name: str = "threshold") -> float:
    """The QoS threshold's one rule, for :func:`explain_run`, :func:`slowest_runs` and ``explain
    --threshold`` (``name``: as the caller gave it): a fraction of the expected time strictly
    between 0 and 1, 0.10 for "at most 10 % slower", or a string of one (``"0.1"``, ``"10%"``, as
    the output writes levels); returned as a float. A number of 1 or more is refused rather
    than read as a slowdown of 100 % or more: it is most often a percentage (10 for 10 %)."""
    if isinstance(threshold, str):
        from .models.columns import read_level

        try:
            threshold = read_level(threshold)
        except ValueError:
            pass  # refused below, by its text
    if isinstance(threshold, numbers.Real) and not isinstance(threshold, (bool, np.bool_)):
        x = float(threshold)
        if 0 < x < 1:
            return x
        shown = f"{x:g}"
        # 10 for 10 %: say what it would mean, and what was likely meant
        meant = f" ({shown} would be {x * 100:g}% slower; for {shown}% give {x / 100:g})" if 1 <= x <= 100 else ""
    else:
        shown, meant = repr(threshold), ""
    raise InputError(f"{name} {shown} is not a fraction between 0 and 1",
                     "give the QoS threshold on the degradation as a fraction: 0.05, 0.10 or 0.20 "
                     f"for 5%, 10% or 20% slower than expected{meant}")


def _check_count(value: object, name: str, what: str) -> None:
    """A count of at least 1 (``--top``, ``--stages``), named as the caller gave it."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 1:
        raise InputError(f"{name} {value!r} is not a whole number of at least 1",
                         f"give how many {what}, e.g. {name}{'=' if not name.startswith('-') else ' '}3")


def explain_run(run_id: str, store: Store | str | Path | None = None,
                models: DegradationModel | None = None, *, threshold: float | str = 0.10,
                top_stages: int = 3) -> Explanation:
    """Expected and actual time of a run, its degradation, and the resource group that caused it.

    Parameters
    ----------
    run_id : str
        A run in the store.
    store : Store or path, optional
        Default: the embedded store.
    models : DegradationModel, optional
        Default: :func:`default_model` (trained on labelled runs).
    threshold : float
        QoS threshold on the degradation, a fraction strictly between 0 and 1 (0.05, 0.10 or
        0.20 are usual); ``violated`` compares the measured degradation, or the estimate when
        the job has no clean runs, against it.
    top_stages : int
        How many stages to list (``Explanation.stages``), at least 1.

    Raises
    ------
    InputError
        ``threshold`` or ``top_stages`` out of range.
    UnknownJobError
        The run is not in the store or has no completed stages.
    DegenerateDataError
        Nothing to compare the run with: its job has no other clean run, or none of the run's
        stages matches theirs (unless ``models`` reconstructs baselines with its autoencoder).
    """
    from .store import io

    threshold = _check_threshold(threshold)
    _check_count(top_stages, "top_stages", "stages to list")
    top_stages = int(top_stages)  # numpy's numbers as Python's
    st = store if hasattr(store, "read") else io.open(store)
    runs = st.runs()  # type: ignore[union-attr]
    if isinstance(run_id, str) and not (runs["run_id"] == run_id).any():
        run_id = st.run_id_of(run_id)  # type: ignore[union-attr]  # Spark's app id, as the UI shows it
    row = runs[runs["run_id"] == run_id]
    if row.empty:
        latest = runs.sort_values("start_ms")["run_id"].tail(3).tolist()[::-1] if "start_ms" in runs else []
        if not latest:
            raise UnknownJobError(f"no run {run_id!r} in store {st.path!r}: it has no runs yet",  # type: ignore[union-attr]
                                  _RECORD_FIRST)
        import difflib

        # a run id mistyped by a character or two (as `store edit` answers it)
        close = difflib.get_close_matches(str(run_id), [str(r) for r in runs["run_id"]], n=3, cutoff=0.8)
        raise UnknownJobError(f"no run {run_id!r} in store {st.path!r}",  # type: ignore[union-attr]
                              (f"did you mean {', '.join(close)}? " if close else "")
                              + f"give one of its runs, e.g. {', '.join(latest)}; `sparkpredict store summary "
                              f"--store {st.path}` lists the latest runs")  # type: ignore[union-attr]
    job = str(row["job"].iloc[0])
    status = row["status"].iloc[0]
    model = models or default_model(st)  # type: ignore[arg-type]
    df, baselines = _stages_and_baselines(st, [job], run_ids=[run_id])  # type: ignore[arg-type]
    ended = {"failed": "failed", "killed": "was killed", "running": "is still running",
             "incomplete": "was recorded only in part (its event log ended before the application did, or "
                           "its listener missed events: Spark dropped them, or the listener failed on them)",
             }.get(status)
    if df[df["run_id"] == run_id].empty and st.read("tasks", columns=["run_id"],  # type: ignore[union-attr]
                                                    run_ids=[run_id]).empty \
            and not st.read("stages", columns=["run_id"], run_ids=[run_id]).empty:  # type: ignore[union-attr]
        # its stages are there, compared through their tasks: "no completed stages" misled
        raise UnknownJobError(f"run {run_id!r} was recorded without task rows "
                              "(spark.sparkpredict.tasks=false), and explain compares its stages' tasks",
                              "record the job's runs with spark.sparkpredict.tasks=true (the default)")
    try:
        e = _explain(run_id, job, model, df, baselines, threshold, top_stages, runs, st.path)  # type: ignore[union-attr]
    except UnknownJobError as exc:
        if ended:
            raise UnknownJobError(f"run {run_id!r} {ended} before it completed a stage: nothing to explain",
                                  "explain a run that completed at least one stage") from exc
        raise
    _outside_stages(e, st, runs, baselines[run_id].run_ids)
    _recovered(e, st)
    if ended:
        e.warnings.insert(0, f"the run {ended}: only its completed stages are compared with the "
                             "clean runs (its actual time is theirs, not a whole run's)")
    elif status == "excluded":
        e.warnings.insert(0, f"the run is excluded from training (sparkpredict store edit --exclude), "
                             f"so it is no baseline of the job's other runs; `sparkpredict store edit "
                             f"{shlex.quote(run_id)} --include` takes it back")
    return e


def _stage_windows(st: Any, run_ids: list[str]) -> pd.DataFrame:
    """The stage windows of ``run_ids`` that :func:`_outside_stages` reads: once for all the runs
    ``explain --job`` lists and their clean runs, not one read per run."""
    return st.read("stages", columns=["run_id", "submission_ms", "completion_ms"], run_ids=run_ids)


def _outside_stages(e: Explanation, st: Any, runs: pd.DataFrame, clean: Iterable[str],
                    windows: pd.DataFrame | None = None) -> None:
    """Set ``e.wall_ms``, and warn when the run's time with no stage running (the driver's
    start-up, its own work between jobs) exceeds its clean runs' by more than
    :data:`OUTSIDE_STAGES_MIN_S` and :data:`OUTSIDE_STAGES_SHARE`: explain compares stages while a
    runtime model, and the advice's "runs furthest above the model", judge the wall time. A run
    sent here as 1.6x its model's was found "-7 %" from its stages alone, and nothing said where
    the time went. ``windows``: :func:`_stage_windows` of (at least) the run and ``clean``."""
    walls = runs.set_index("run_id")["wall_ms"].astype(float) if "wall_ms" in runs else None
    if walls is None or e.run_id not in walls.index or not walls[e.run_id] > 0:
        return
    e.wall_ms = float(walls[e.run_id])
    ids = [r for r in {e.run_id, *clean} if r in walls.index and walls[r] > 0]
    stages = _stage_windows(st, ids) if windows is None else windows[windows["run_id"].isin(ids)]
    outside = {r: walls[r] - _busy_ms(g) for r, g in stages.groupby("run_id")}
    others = [v for r, v in outside.items() if r != e.run_id]
    if e.run_id not in outside or not others:
        return
    mine, typical = outside[e.run_id], float(np.median(others))
    if mine - typical > max(OUTSIDE_STAGES_MIN_S * 1000, OUTSIDE_STAGES_SHARE * max(typical, 0.0)):
        e.warnings.append(
            f"the run spent {format_duration(mine / 1000)} with no stage running (of "
            f"{format_duration(e.wall_ms / 1000)} from start to end), its clean runs a median "
            f"{format_duration(typical / 1000)}: that time (the driver's start-up and its own work between "
            "jobs) is not compared here, while a runtime model's prediction counts it")


def _recovery_rows(st: Any, run_ids: list[str]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The stage attempts, executors and task statuses of ``run_ids`` that :func:`_recovered`
    reads: once for all the runs ``explain --job`` lists, not three reads per run."""
    return (st.read("stages", columns=["run_id", "stage_id", "stage_attempt_id"], run_ids=run_ids),
            st.read("executors", columns=["run_id", "executor_id", "removed_ms", "removed_reason"], run_ids=run_ids),
            st.read("tasks", columns=["run_id", "executor_id", "status"], run_ids=run_ids))


def _recovered(e: Explanation, st: Any,
               rows: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame] | None = None) -> None:
    """Warn when Spark reran work in the run, its executors lost (a spot or preemptible one taken
    back, a JVM killed): a stage run again in a later attempt, or tasks failed on an executor that
    was removed before the run ended. The recovery's time is in the run's stage times, and its
    rerun tasks, on survivors or on a fresh executor, resemble a neighbour's interference: a
    real ``local-cluster`` run whose executor was killed mid-reduce measured +47.9 % against its
    clean run (its reduce stage 15.4 s in two attempts, 4.9 s there), main cause cpu, and
    nothing said that it had lost an executor."""
    stages, ex, tasks = (t[t["run_id"] == e.run_id] for t in rows or _recovery_rows(st, [e.run_id]))
    attempts = stages[["stage_id", "stage_attempt_id"]].drop_duplicates().groupby("stage_id").size()
    rerun = sorted(int(s) for s in attempts[attempts > 1].index)
    ex = ex[ex["removed_ms"].notna()].drop_duplicates("executor_id", keep="last")
    # failed, not killed: a speculative copy killed on an executor that dynamic allocation
    # later let go idle is no loss
    failed_on = set(tasks.loc[tasks["status"].astype(str) == "FAILED", "executor_id"].astype(str))
    lost = ex[ex["executor_id"].astype(str).isin(failed_on)]
    if not rerun and lost.empty:
        return
    who = "; ".join(f"executor {r.executor_id}" + (f": {r.removed_reason}" if isinstance(r.removed_reason, str)
                                                   and r.removed_reason.strip() else "")
                    for r in lost.itertuples())
    what = (f"{plural(len(rerun), 'stage')} ran again in a later attempt ({', '.join(map(str, rerun))})"
            if rerun else "tasks failed on it and ran again")
    e.recovery = ", ".join(([f"lost {plural(len(lost), 'executor')}"] if not lost.empty else [])
                           + ([f"{plural(len(rerun), 'stage')} ran again"] if rerun else ["tasks ran again"]))
    e.warnings.append(
        ("Spark lost " + (f"{plural(len(lost), 'executor')} in this run ({who}) and recovered: "
                          if not lost.empty else "work in this run and recovered: ")) + what
        + ". That recovery's time is in the run's stage times, and it is no neighbour's interference: "
          "a cause named from the metrics is what the rerun tasks resemble")


def _busy_ms(stages: pd.DataFrame) -> float:
    """Milliseconds during which at least one of ``stages`` ran (their intervals' union)."""
    iv = stages[["submission_ms", "completion_ms"]].dropna().astype(float).to_numpy()
    busy, end = 0.0, -math.inf
    for a, b in iv[np.argsort(iv[:, 0])] if len(iv) else []:
        if b > end:
            busy += b - max(a, end)
            end = b
    return busy


def _explain(run_id: str, job: str, model: DegradationModel, df: pd.DataFrame,
             baselines: dict[str, MB.Baseline], threshold: float, top_stages: int,
             runs: pd.DataFrame, store_path: str | None = None) -> Explanation:
    """:func:`explain_run` on the job's :func:`labelled_stages` (which hold the run) and the
    baseline each run was compared with."""
    rows = df[df["run_id"] == run_id].reset_index(drop=True)
    if rows.empty:
        raise UnknownJobError(f"run {run_id!r} has no completed stages to explain",
                              "explain a run that finished at least one stage")
    base = baselines[run_id]
    others = set(base.run_ids)
    matched = rows["expected_ms"].notna() & (rows["expected_ms"] > 0)
    if (not others or not matched.any()) and getattr(model, "dae_", None) is None:
        # The only clean run of its job would be compared with itself (a slowdown of 0 by
        # construction), and a run sharing no stage with the clean runs with nothing at all.
        raise _nothing_to_compare(run_id, job, len(rows), others, runs, store_path)
    total_ms = float(rows["duration_ms"].sum())
    share = float(rows.loc[matched, "duration_ms"].sum()) / total_ms if total_ms > 0 else 1.0
    notes = []
    if share < MATCHED_SHARE_WARN:
        notes.append(f"only {share:.0%} of this run's stage time has a counterpart in the clean runs "
                     f"of job {job!r}; the measured degradation covers that part only. If the job's "
                     "runs are different applications, give each its own job name "
                     "(spark.sparkpredict.job, or `sparkpredict ingest --job NAME` for event logs)")
    notes += MB.notes(base, runs, run_id, job)
    act, exp, d = run_degradation(rows)
    if not math.isfinite(d):
        act, exp, d = total_ms, None, None  # type: ignore[assignment]
    est = run_estimate(model, rows)
    host = model.host_culprit(rows)
    phi = shapley(model, rows, host)
    pos = {g: max(v, 0.0) for g, v in phi.items()}
    tot = sum(pos.values())
    shares = {g: (v / tot if tot > 0 else 0.0) for g, v in pos.items()}
    trained: tuple[float, float] | None = getattr(model, "train_run_ms_", None)
    too_short = trained is not None and total_ms < trained[0] / SHORTER_THAN_TRAINED
    named = tot > 0 and est >= CAUSE_MIN_SLOWDOWN
    # Out of the trained range the estimate can contradict the measurement (1-s demo runs: -49 %
    # to +80 % against -16 % to +25 % measured); a cause is named there only for a slowdown the
    # clean runs confirm, as under a real bubble (tests/test_explain_bubbles.py, 1-s jobs).
    # Runs of other setups confirm nothing: their difference (executors, size) is in the measure.
    across = base.kind == MB.ANY_SETUP
    confirmed = d is not None and d >= CAUSE_MIN_SLOWDOWN and not across
    withheld = named and too_short and not confirmed
    unconfirmed = ("; only runs of other setups are there to compare it with, which cannot confirm "
                   "a slowdown, so no cause is named") if across else \
        "; the job's clean runs show no slowdown, so no cause is named"
    if trained is not None and too_short:
        notes.append(f"this run's stages took {format_duration(total_ms / 1000)} in all, under "
                     f"1/{SHORTER_THAN_TRAINED:g} of the shortest run the monitor's model learnt from "
                     f"({format_duration(trained[0] / 1000)}): its estimate from metrics is an extrapolation"
                     + (unconfirmed if withheld else ""))
    main = max(shares, key=shares.__getitem__) if named and not withheld else None
    if main is not None and d is not None and d < CAUSE_MIN_SLOWDOWN:
        # the documented rule names it (an estimate of 5 % or more), but the time says otherwise
        notes.append(f"its measured time is {d * 100:+.1f}% against the clean runs: the "
                     f"{est * 100:+.1f}% its metrics suggest did not show in its time, so {main} is "
                     "what its metrics resemble, not a slowdown measured")
    footprint = host_footprint(rows)
    if main == "cpu" and host is None:
        # named by default, not by evidence: under every kind of neighbour tasks mostly wait for
        # a core, and the documented attribution without host counters named a quarter right
        why = ("the run has no host samples (an event log, or a listener without the host plugin)"
               if footprint is None else "the monitor's model was trained on runs without host samples")
        notes.append(f"cpu is named by default: {why}, so the time its tasks waited for a core is "
                     "counted as cpu whatever took the core (a memory, disk or network neighbour "
                     "makes tasks wait too; without host counters the cause was named right in "
                     "about 1 of 4 slowed runs, docs/monitor.md)")
    judged = d if d is not None else est
    est_s = model.predict(rows)
    # pandas-stubs type every named-tuple field as any scalar (None, NaT, Interval, ...)
    stage_rows: Iterable[Any] = rows.itertuples()
    impacts = [StageImpact(int(r.stage_id), str(r.name), float(r.duration_ms),
                           None if not np.isfinite(r.expected_ms) else float(r.expected_ms),
                           None if not np.isfinite(r.degradation) else float(r.degradation), float(e))
               for r, e in zip(stage_rows, est_s)]
    impacts.sort(key=lambda s: -(s.actual_ms - (s.expected_ms if s.expected_ms is not None
                                                else s.actual_ms / (1 + s.estimated_degradation))))
    return Explanation(
        run_id=run_id, job=job, actual_ms=act, expected_ms=exp, degradation=d,
        estimated_degradation=est, contributions=phi, shares=shares, main_cause=main,
        main_share=shares.get(main, 0.0) if main else 0.0,
        qos={t: judged > t for t in QOS_THRESHOLDS}, threshold=threshold, violated=judged > threshold,
        clean_runs=len(others), label=rows["label"].iloc[0], stages=impacts[:top_stages],
        culprit=host, footprint=footprint, matched_share=share, warnings=notes,
        too_short=too_short, cause_withheld=withheld, baseline=base.kind, baseline_setup=base.setup)


def _nothing_to_compare(run_id: str, job: str, n_stages: int, others: set[str],
                        runs: pd.DataFrame, store_path: str | None = None) -> DegenerateDataError:
    """The error of a run that has no other clean run, or shares no stage with them, with a fix
    that fits how it was recorded: an event log is written, so it can only be ingested again
    under another job name, where a run to come can be submitted with a job name and a label."""
    mine = runs.loc[runs["run_id"] == run_id]
    ingested = "source" in mine and bool(mine["source"].eq("eventlog").any())
    # the commands run as given: without --store they went to the default store
    at = "" if store_path is None else f" --store {shlex.quote(store_path)}"
    if not others:
        what = f"no other clean run of job {job!r} to compare it with"
        fix = (f"ingest event logs of other runs of the same application under job name {job!r} "
               f"(`sparkpredict ingest LOG...{at} --job {shlex.quote(job)}`), then explain again" if ingested else
               f"record other runs of the same application under job name {job!r} (undisturbed ones "
               "labelled --conf spark.sparkpredict.interference=none), then explain again")
        return DegenerateDataError(f"cannot explain run {run_id!r}: {what}", fix)
    # Not one stage in common: the job's runs are other applications that share its name
    # (event logs of unrelated `spark-shell` sessions are all "Spark shell")
    what = (f"none of its {plural(n_stages, 'stage')} matches a stage of the {plural(len(others), 'other run')} "
            f"of job {job!r} it is compared with (same call site and task count): they are runs of "
            "another application under the same job name, or of this one cut into other task counts")
    fix = ("give each application its own job name: move this run and the other runs of the same "
           f"application to a name of its own (`sparkpredict store edit {run_id} RUN_ID...{at} --job NAME`), "
           "then explain again"
           if ingested else
           "give each application its own job name (--conf spark.sparkpredict.job=NAME, or "
           "`sparkpredict submit --job NAME`) and record other runs of this one under it, then "
           "explain again")
    return DegenerateDataError(f"cannot explain run {run_id!r}: {what}", fix)


@dataclass
class SlowRun:
    """One of a job's runs that took longer than its size and executors explain."""

    run_id: str
    #: recorded runtime / the job's runtime model's prediction for that run (see
    #: :meth:`.advice_source.HistorySource.runs_above_model`); None when the job has too few runs
    #: for a model fitted without the run, where the ratio would only restate the fit
    runtime_over_model: float | None
    explanation: Explanation | None
    #: why it could not be explained (no clean run to compare with, ...), else None
    error: str | None = None
    #: the prediction came from the cross-validation fold that left the run out; False: in sample
    out_of_fold: bool = False
    #: runs the job's runtime model was fitted on
    model_runs: int | None = None
    #: the fix of :attr:`error`'s failure, which fits its cause (another application under the
    #: job's name, no clean run to compare with, ...)
    fix: str | None = None


def slowest_runs(job: str, store: Store | str | Path | None = None, *, top: int = 5,
                 models: DegradationModel | None = None, threshold: float | str = 0.10) -> list[SlowRun]:
    """The job's ``top`` runs furthest above its runtime model's prediction, each explained.

    The runtime model (fitted on the store's runs and cached, as the advice fits it) says which
    runs took longer than their input size and executor count explain, each against the
    prediction of its cross-validation fold that left it out; :func:`explain_run`
    then says how much their stages were slowed against the job's clean runs, and by what. A
    history's own slow runs widen every interval the advice gives: these are the ones to look
    at first.

    Where the model kept no out-of-fold predictions, the ratio is in sample
    (``SlowRun.out_of_fold`` is False). With fewer runs than the whole-job model needs
    (:data:`sparkpredict.models.hybrid.MIN_RUNS`), the job's model is the replay of a run's own
    tasks: with 2 or more runs each run's ratio is against the replay of the others (leave one
    run out); a single run's only prediction is that run replayed, so ``runtime_over_model`` is
    None there, and the run is only explained against the job's clean runs.

    ``top`` is at least 1 and ``threshold`` a fraction strictly between 0 and 1, as
    :func:`explain_run` takes it (:class:`InputError` otherwise, before the store is read).
    """
    from .advice_source import HistorySource
    from .errors import SparkPredictError
    from .store import io

    _check_count(top, "top", "runs to list")
    threshold = _check_threshold(threshold)
    top = int(top)  # numpy's numbers as Python's
    from .models.hybrid import MIN_RUNS

    st = store if hasattr(store, "read") else io.open(store)
    if st.runs().empty:  # type: ignore[union-attr]
        # before the advice's own error, whose fix offers a model folder: explain reads none
        raise UnknownJobError(f"store {st.path!r} has no runs yet", _RECORD_FIRST)  # type: ignore[union-attr]
    src = HistorySource.resolve(job, store=st)
    found = src.runs_above_model(k=top, min_ratio=0.0)
    if not found:
        return []
    oof = bool(getattr(src.model, "slow_runs_", None))  # what runs_above_model ranks by
    # In sample (a model saved without its out-of-fold ratios, or a replay with no run to
    # predict another from), a run's ratio can be its own replay's, 1.00x give or take its
    # self-check: no ratio then, and the runs are ranked by their measured slowdown instead.
    no_ratio = not oof and (src.model_name == "replay" or (src.n_runs or 0) < MIN_RUNS)
    if no_ratio:
        found = src.runs_above_model(k=max(top, 50), min_ratio=0.0)
    # the model and the stage features once for all the runs, not per run
    model = models or default_model(st)  # type: ignore[arg-type]
    df, baselines = _stages_and_baselines(st, [job], run_ids=[r for r, _ in found])  # type: ignore[arg-type]
    runs = st.runs()  # type: ignore[union-attr]
    recovery = _recovery_rows(st, [r for r, _ in found])
    windows = _stage_windows(st, sorted({r for run_id, _ in found if run_id in baselines
                                         for r in (run_id, *baselines[run_id].run_ids)}))
    out = []
    for run_id, ratio in found:
        shown = None if no_ratio else ratio
        try:
            e = _explain(run_id, job, model, df, baselines, threshold, 3, runs, st.path)  # type: ignore[union-attr]
            _outside_stages(e, st, runs, baselines[run_id].run_ids, windows)  # as explain_run says it
            _recovered(e, st, recovery)
            out.append(SlowRun(run_id, shown, e, out_of_fold=oof, model_runs=src.n_runs))
        except SparkPredictError as exc:
            out.append(SlowRun(run_id, shown, None, exc.message, out_of_fold=oof, model_runs=src.n_runs,
                               fix=exc.fix))
    if no_ratio:
        def slowdown(r: SlowRun) -> float:
            d = None if r.explanation is None else r.explanation.degradation
            return -math.inf if d is None else d
        out = sorted(out, key=slowdown, reverse=True)[:top]
    return out


#: Why a run of a job is not among those :func:`slowest_runs` ranks (:func:`unranked_runs`'s keys,
#: in the order said), each as ``explain --job`` words it after the count
UNRANKED = {
    "no_size": "without an input size, executor count or runtime (the runtime model is fitted without them)",
    "no_ratio": "without an out-of-fold prediction (the model keeps one for its runs furthest above it)",
    "excluded": "excluded from training (`sparkpredict store edit --exclude`)",
    "not_succeeded": "that did not succeed (failed, killed or still running)",
}


def unranked_runs(job: str, store: Store | str | Path | None = None) -> dict[str, list[str]]:
    """The runs of ``job`` in the store that :func:`slowest_runs` cannot set against the job's
    runtime model, by why (the keys of :data:`UNRANKED`, each present, its run ids in the
    store's order): ``slowest_runs`` leaves them out, so a listing as long as the job's runs
    named fewer than the store holds, without a word. Each can still be explained against the
    job's clean runs (:func:`explain_run`). Nothing for a job the store does not hold."""
    from .advice_source import HistorySource
    from .models.job_runs import fitted_rows
    from .store import io

    st = store if hasattr(store, "read") else io.open(store)
    raw = st.runs()  # type: ignore[union-attr]
    out: dict[str, list[str]] = {why: [] for why in UNRANKED}
    mine = raw[raw["job"] == job] if not raw.empty else raw
    if mine.empty:
        return out
    src = HistorySource.resolve(job, store=st)
    ranked = {r for r, _ in src.runs_above_model(k=len(mine), min_ratio=0.0)}
    runs = src.runs
    fitted = set() if runs is None or runs.empty else set(runs.loc[fitted_rows(runs), "run_id"].astype(str))
    for run_id, status in zip(mine["run_id"].astype(str), mine["status"].astype(str)):
        if run_id in ranked:
            continue
        why = "excluded" if status == "excluded" else "not_succeeded" if status != "succeeded" \
            else "no_ratio" if run_id in fitted else "no_size"
        out[why].append(run_id)
    return out
