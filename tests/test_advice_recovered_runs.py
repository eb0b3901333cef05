"""Runs that lost an executor or retried failed tasks, among the runs the advice's model fits.

Their wall time includes Spark's recovery (a real local-cluster run that lost one executor took
+47.9 % against its clean twin, tests/test_listener_fetch_failed.py). Whether they belong in the
history is the user's call, since on spot capacity they are what happens: the advice keeps them
and says so, naming the command that leaves them out. A copy of the recorded history store gets
one more run of sort, appended as the listener writes it: a copy of a recorded run, 1.48x as
long, with failed tasks and (unless said) a stage in a second attempt.
"""
from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pandas as pd
import pytest

from sparkpredict import store as store_mod
from sparkpredict import suggest_executors
from sparkpredict.cli import main

HISTORY = Path(__file__).parent / "data" / "history"
PREFIX = "retried failed tasks"


def _with_recovered_run(tmp_path, *, rerun: bool = True, failed: int = 3, props: dict | None = None,
                        run_id: str = "app-lost-1", later_ms: int = 60_000) -> store_mod.Store:
    path = tmp_path / "s"
    if not path.exists():
        shutil.copytree(HISTORY, path)
    st = store_mod.open(path)
    runs, stages = st.runs(), st.stages()
    base = runs[(runs.job == "sort") & (runs.input_bytes == 16_000_000) & (runs.executors_requested == 2)].iloc[[0]]
    wall = int(base.wall_ms.iloc[0] * 1.48)
    start = int(runs.start_ms.max()) + later_ms
    properties = json.loads(base.properties_json.iloc[0])
    properties.update(props or {})
    new = base.assign(run_id=run_id, app_id=run_id, wall_ms=wall, start_ms=start, end_ms=start + wall,
                      num_failed_tasks=failed, properties_json=json.dumps(properties, separators=(",", ":")))
    mine = stages[stages.run_id == base.run_id.iloc[0]].assign(run_id=run_id)
    if rerun:  # the map stage again, for the outputs the lost executor held
        again = mine[mine.stage_id == mine.stage_id.min()].assign(stage_attempt_id=1)
        mine = pd.concat([mine, again], ignore_index=True)
    st.append({"runs": new, "stages": mine})
    return st


def _recovery(warnings) -> list[str]:
    return [w for w in warnings if PREFIX in w]


def test_a_run_that_lost_an_executor_is_named_with_the_command_that_leaves_it_out(tmp_path, capsys):
    clean = suggest_executors("sort", "16MB", store=HISTORY)
    assert not _recovery(clean.warnings), clean.warnings
    st = _with_recovered_run(tmp_path)
    a = suggest_executors("sort", "16MB", store=st.path)
    (w,) = _recovery(a.warnings)
    assert w.startswith("1 of the 25 runs the model of sort was fitted on retried failed tasks and ran "
                        "stages again, as Spark does after losing an executor"), w
    assert "include the recovery" in w
    command = re.search(r"`(sparkpredict store edit [^`]*)`", w).group(1)
    assert command == f"sparkpredict store edit app-lost-1 --exclude --store {shlex.quote(str(st.path))}"
    # the CLI's table and --json carry it as the API does
    assert main(["suggest", "--job", "sort", "--input-size", "16MB", "--store", str(st.path), "--json"]) == 0
    assert _recovery(json.loads(capsys.readouterr().out)["warnings"]) == [w]
    # the command named works, and the advice then fits the 24 runs left without a word
    assert main(shlex.split(command)[1:]) == 0
    capsys.readouterr()
    b = suggest_executors("sort", "16MB", store=st.path)
    assert b.n_runs == 24 and not _recovery(b.warnings), b.warnings


def test_failed_tasks_alone_are_named_and_a_speculative_runs_killed_copies_are_not(tmp_path):
    st = _with_recovered_run(tmp_path, rerun=False, failed=2, run_id="app-failed-1")
    (w,) = _recovery(suggest_executors("sort", "16MB", store=st.path).warnings)
    assert w.startswith("1 of the 25 runs the model of sort was fitted on retried failed tasks (an executor "
                        "lost: spot or preemptible capacity taken back, a JVM killed; or tasks that failed)")
    assert "store edit app-failed-1 --exclude" in w
    # with speculation on, num_failed_tasks counts the losing copies Spark killed: no recovery
    _with_recovered_run(tmp_path, rerun=False, failed=4, run_id="app-spec-1", later_ms=120_000,
                        props={"spark.speculation": "true"})
    (w,) = _recovery(suggest_executors("sort", "16MB", store=st.path).warnings)
    assert w.startswith("1 of the 26 runs") and "app-spec-1" not in w
    # ... unless a stage ran again: that is Spark's recovery whatever speculation did
    _with_recovered_run(tmp_path, rerun=True, failed=4, run_id="app-spec-2", later_ms=180_000,
                        props={"spark.speculation": "true"})
    (w,) = _recovery(suggest_executors("sort", "16MB", store=st.path).warnings)
    assert w.startswith("2 of the 27 runs the model of sort was fitted on retried failed tasks, 1 of them "
                        "running stages again"), w
    assert "store edit app-failed-1 app-spec-2 --exclude" in w


def test_more_than_ten_are_named_ten_at_a_time(tmp_path):
    for i in range(12):
        st = _with_recovered_run(tmp_path, run_id=f"app-lost-{i:02d}", later_ms=60_000 * (i + 1))
    (w,) = _recovery(suggest_executors("sort", "16MB", store=st.path).warnings)
    assert w.startswith("12 of the 36 runs")
    named = re.search(r"store edit (.*?) --exclude", w).group(1).split()
    assert named == [f"app-lost-{i:02d}" for i in range(10)]  # the oldest first
    assert "(the first 10 of 12; the advice names the others once these are out)" in w


def test_a_model_given_names_none(tmp_path):
    """A model folder was fitted on runs the store given need not hold: nothing to name."""
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_all, save_models

    st = _with_recovered_run(tmp_path)
    save_models(fit_all(runs_table(st.runs()[lambda r: r.job == "sort"]), kind="amdahl"), tmp_path / "m")
    a = suggest_executors("sort", "16MB", store=st.path, models=tmp_path / "m")
    assert not _recovery(a.warnings), a.warnings


def test_what_one_recovered_run_moves(tmp_path):
    """docs/advice.md's number for sort: the whole-job fit has no outlier handling, and one run
    1.48x as long at 16 MB on 2 executors moves the prediction there by +2.8 %, its share of
    25 runs, not the 48 %."""
    clean = suggest_executors("sort", "16MB", store=HISTORY, executor_counts="2")
    st = _with_recovered_run(tmp_path)
    moved = suggest_executors("sort", "16MB", store=st.path, executor_counts="2")
    assert moved.predicted_runtime_s / clean.predicted_runtime_s - 1 == pytest.approx(0.028, abs=0.002)


def test_the_runs_the_fit_keeps_are_the_runs_the_recovery_check_looks_at():
    """One function (job_runs.fitted_rows) says which runs a whole-job fit keeps; the fit, the
    recovery check and the in-sample "runs above the model" all take it. A row each rule drops."""
    import numpy as np

    from sparkpredict.advice_source import _recovered_runs
    from sparkpredict.models.hybrid import JobRuntimeModel
    from sparkpredict.models.job_runs import fitted_rows
    from sparkpredict.units import MAX_EXECUTORS

    nan, inf = float("nan"), float("inf")
    rows = {  # run id: (input_bytes, executors, runtime_s)
        "kept": (1e9, 2, 10.0), "kept-at-the-cap": (2e9, MAX_EXECUTORS, 12.0),
        "size-nan": (nan, 2, 10.0), "size-0": (0, 2, 10.0), "size-inf": (inf, 2, 10.0),
        "execs-nan": (1e9, nan, 10.0), "execs-negative": (1e9, -1, 10.0),
        "execs-over-the-cap": (1e9, MAX_EXECUTORS + 1, 10.0),
        "runtime-nan": (1e9, 2, nan), "runtime-negative": (1e9, 2, -3.0), "runtime-inf": (1e9, 2, inf),
        "kept-3": (3e9, 4, 14.0), "kept-4": (4e9, 8, 15.0),
    }
    runs = pd.DataFrame([{"run_id": r, "input_bytes": s, "executors": e, "runtime_s": t}
                         for r, (s, e, t) in rows.items()])
    kept = ["kept", "kept-at-the-cap", "kept-3", "kept-4"]
    assert runs.loc[fitted_rows(runs), "run_id"].tolist() == kept
    # the fit keeps the same rows (in its own order) and counts the others as dropped
    model = JobRuntimeModel()
    *_, fit_rows = model._training_columns(runs)
    assert sorted(runs["run_id"].iloc[fit_rows]) == sorted(kept) and model.dropped_runs_ == len(rows) - 4
    # the recovery check names a recovered run only where the fit kept it
    raw = runs.assign(status="succeeded", num_failed_tasks=1)
    assert _recovered_runs(raw, runs, frozenset(), n_fitted=4) == [(r, False) for r in kept]
    assert len(_recovered_runs(raw, runs, frozenset(), n_fitted=len(rows))) == len(rows)  # none dropped
    assert np.array_equal(fitted_rows(runs.to_dict("list")), fitted_rows(runs))  # a mapping as a table
