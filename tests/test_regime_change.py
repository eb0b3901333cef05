"""A job that changed (a release 1.6x slower, other machines): the advice warns when the job's
newest runs all lie beyond a model of its earlier runs, and names the command that leaves the
older runs out, `sparkpredict store edit --exclude --job J --before TIME`, which selects a job's
runs by their start time (tests/test_store_edit_by_time.py). Histories are real stores written
without Spark."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sparkpredict import store as store_mod
from sparkpredict import suggest_executors
from sparkpredict.units import format_time

GB = 10**9
T0 = 1_780_000_000_000  # 2026-05-28
DAY = 86_400_000


def law(size_gb, e):
    """The old regime's runtime: 100 s per GB spread over the executors, 20 s fixed, 1.5 s per executor."""
    return 20.0 + 100.0 * size_gb / e + 1.5 * e


def history(n_old=30, k=0, factor=1.0, seed=0, job="etl"):
    """Store rows of ``n_old`` runs at random sizes and counts with 4 % noise, one a day, then
    ``k`` more whose runtime is ``factor`` times the old regime's."""
    rng = np.random.default_rng(seed)
    cells = [(s, e) for s in (10, 20, 40, 80) for e in (2, 4, 8, 16)]
    runs = []
    for i in range(n_old + k):
        s, e = cells[rng.integers(len(cells))]
        t = law(s, e) * np.exp(0.04 * rng.standard_normal()) * (factor if i >= n_old else 1.0)
        rid = f"app-{job}-{i:03d}"
        runs.append({"run_id": rid, "app_id": rid, "job": job, "app_name": job, "status": "succeeded",
                     "start_ms": T0 + i * DAY, "wall_ms": int(t * 1000), "updated_ms": T0 + i * DAY,
                     "executors_requested": e, "executors_max": e, "executor_cores": 4,
                     "executor_memory_mb": 8192, "input_bytes": int(s * GB),
                     "properties_json": json.dumps({"spark.executor.instances": str(e)})})
    return pd.DataFrame(runs)


def make_store(path, runs):
    st = store_mod.open(path, create=True)
    st.append({"runs": runs})
    return str(path)


def changed(advice):
    return [w for w in advice.warnings if "the job changed" in w]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("factor, k, seed", [(1.6, 3, 0), (1.6, 4, 1), (1.6, 3, 2), (0.6, 3, 0), (0.6, 4, 1),
                                             (0.6, 4, 2)])
def test_the_advice_warns_when_the_newest_runs_ran_slower_or_faster_and_names_the_fix(tmp_path, factor, k, seed):
    runs = history(k=k, factor=factor, seed=seed)
    path = make_store(tmp_path / "s", runs)
    a = suggest_executors("etl", "40GB", deadline_s="10m", store=path)
    said = changed(a)
    assert len(said) == 1, a.warnings
    w = said[0]
    since = T0 + 30 * DAY
    assert w.startswith(f"the newest {k} runs of etl (since {format_time(since)[:16].replace('T', ' ')} UTC) "
                        "took a median "), w
    ratio = float(re.search(r"took a median ([0-9.]+)x", w).group(1))
    assert abs(np.log(ratio / factor)) < np.log(1.15), (ratio, factor)
    assert ("(slower)" in w) == (factor > 1)
    if factor < 1:
        assert f"({1 / ratio:.2f}x faster)" in w  # as a reader works it out from the ratio printed
    assert "a model of its " in w and "earlier runs predicts" in w
    # the exact command: every run before the change, none of the changed ones
    command = f"`sparkpredict store edit --exclude --job etl --before {format_time(since)} --store {path}`"
    assert command in w, w
    assert f"that leaves its {k} runs since" in w
    assert "with --after in place of --before" in w


@pytest.mark.parametrize("seed", range(6))
def test_a_history_of_the_same_shape_that_did_not_change_gets_no_such_warning(tmp_path, seed):
    a = suggest_executors("etl", "40GB", deadline_s="10m", store=make_store(tmp_path / "s", history(n_old=34, seed=seed)))
    assert not changed(a), a.warnings


@pytest.mark.parametrize("factor", [1.6, 0.6])
def test_two_changed_runs_are_not_yet_a_change(tmp_path, factor):
    # two runs 1.6x off happen on a busy cluster; the third says more
    runs = history(k=2, factor=factor, seed=0)
    assert not changed(suggest_executors("etl", "40GB", store=make_store(tmp_path / "s", runs)))
    runs3 = history(k=3, factor=factor, seed=0)
    assert changed(suggest_executors("etl", "40GB", store=make_store(tmp_path / "s3", runs3)))


def test_the_command_the_warning_names_leaves_out_exactly_the_older_runs_and_the_advice_follows(tmp_path, capsys):
    from sparkpredict.cli import main

    runs = history(k=6, factor=1.6, seed=3)
    path = make_store(tmp_path / "s", runs)
    a = suggest_executors("etl", "40GB", deadline_s="10m", store=path)
    command = changed(a)[0].split("`")[1]
    assert command.startswith("sparkpredict store edit --exclude --job etl --before ")
    files = sorted(p.name for p in Path(path).rglob("*.parquet"))
    assert main(command.split()[1:]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == f"store {path}: 30 runs edited"
    assert out[0] == "app-etl-000: status succeeded -> excluded"
    st = store_mod.open(path)
    status = st.runs().set_index("run_id")["status"]
    old = set(runs["run_id"][:30])
    assert set(status[status == "excluded"].index) == old
    assert set(status[status == "succeeded"].index) == set(runs["run_id"]) - old
    # one batch: the edit is atomic
    added = sorted({p.name for p in Path(path).rglob("*.parquet")} - set(files))
    assert len(added) == 1, added
    after = suggest_executors("etl", "40GB", deadline_s="10m", store=path)
    assert not changed(after) and after.n_runs == 6
    truth = law(40, after.executors) * 1.6
    assert abs(after.predicted_runtime_s / truth - 1) < abs(a.predicted_runtime_s / (law(40, a.executors) * 1.6) - 1)


def test_the_finding_is_kept_with_the_model_and_a_model_saved_before_has_none(tmp_path):
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.hybrid import JobRuntimeModel
    from sparkpredict.models.persist import fit_job

    m = fit_job(runs_table(history(k=4, factor=1.6, seed=1)))
    shift = m.recent_shift_
    assert shift["runs"] == 4 and shift["run_ids"] == [f"app-etl-{i:03d}" for i in range(30, 34)]
    assert shift["since_ms"] == T0 + 30 * DAY and shift["previous_ms"] == T0 + 29 * DAY
    doc = json.loads(json.dumps(m.to_dict()))
    assert JobRuntimeModel.from_dict(doc).recent_shift_ == shift
    # a model folder carries it to the advice (no store: the command names none)
    a = suggest_executors("etl", "40GB", models={"etl": JobRuntimeModel.from_dict(doc)})
    assert f"--before {format_time(T0 + 30 * DAY)}`" in changed(a)[0]
    del doc["recent_shift"]
    assert JobRuntimeModel.from_dict(doc).recent_shift_ is None


def test_runs_without_start_times_cannot_be_ordered_and_are_not_judged():
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_job

    table = runs_table(history(k=4, factor=1.6, seed=1))
    assert fit_job(table).recent_shift_ is not None
    assert fit_job(table.drop(columns=["start_ms"])).recent_shift_ is None


def test_newest_runs_beyond_the_earlier_runs_executor_counts_are_no_evidence():
    # a sweep in executor order: the newest runs lie beyond the counts of the earlier ones,
    # where a miss says nothing of a change (C3O's file order had fired on 2 of 21 jobs)
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_job

    table = runs_table(history(n_old=36, seed=4)).sort_values(["executors", "input_bytes"], kind="stable")
    table["start_ms"] = T0 + np.arange(len(table)) * DAY
    slow = table.assign(runtime_s=np.where(table["executors"] == 16, 0.6, 1.0) * table["runtime_s"])
    assert fit_job(slow).recent_shift_ is None


def test_advice_from_a_model_given_says_the_edit_needs_a_refit_to_reach_it(tmp_path):
    # the model given keeps the finding and the runs it was fitted on: the store edit the
    # warning names alone would leave the advice (and the warning) as they were
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_job

    runs = history(k=4, factor=1.6, seed=1)
    path = make_store(tmp_path / "s", runs)
    models = {"etl": fit_job(runs_table(runs))}
    with_store = changed(suggest_executors("etl", "40GB", models=models, store=path))[0]
    assert f"--store {path}`" in with_store
    assert "then fit the model again on the store's runs (`sparkpredict runs`, then `sparkpredict fit`)" in with_store
    alone = changed(suggest_executors("etl", "40GB", models=models))[0]
    assert "(with --store naming the store its runs came from), then fit the model again" in alone
    # a model fitted on the store's runs follows the edit by itself: no refit asked
    assert "fit the model again" not in changed(suggest_executors("etl", "40GB", store=path))[0]


@pytest.mark.parametrize("seed", [1, 3, 5, 6])
def test_newest_runs_that_started_with_an_earlier_one_are_not_told_apart_from_it(seed):
    # the changed runs recorded the start of the run before them: in order they are the fit's
    # (sizes, runtimes), not time's, and `--before` their start would keep that earlier run
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_job

    table = runs_table(history(k=6, factor=1.6, seed=seed))
    tied = table.copy()
    tied.loc[tied["start_ms"] >= T0 + 29 * DAY, "start_ms"] = T0 + 29 * DAY
    shift = fit_job(tied).recent_shift_
    assert shift is None or shift["since_ms"] > shift["previous_ms"], shift
    # runs that share a start among themselves only (pairs) are still ordered against the earlier ones
    pairs = table.assign(start_ms=T0 + (np.arange(len(table)) // 2) * DAY)
    shift = fit_job(pairs).recent_shift_
    assert shift["runs"] == 6 and shift["since_ms"] == T0 + 15 * DAY > shift["previous_ms"]
