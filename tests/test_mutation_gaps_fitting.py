"""The one fitting function of both retrain paths (fitting.py), at the points a third mutation
audit found no test pinning: how a stage model that cannot be fitted is told apart from one that
failed, the seed a stage model gets when none is given, the machine's faults during a stage
fit, and the wording of a job none of whose runs succeeded at the limits of its lists. Each test
here failed on a one-operator change of fitting.py that the rest of the suite let pass. No JVM.
"""
from __future__ import annotations

import json

import pandas as pd
import pytest
from test_mutation_gaps_hybrid import _raw
from test_stage_models import MiB, make_run

from sparkpredict import fitting
from sparkpredict.fitting import (
    fit_group,
    fit_group_safe,
    fit_stage_group,
    no_succeeded_run,
)


@pytest.fixture(scope="module")
def job_tables():
    """The store rows of 4 runs of one job (64-128 MiB, 1-2 executors) with stages and tasks."""
    tables = [make_run(k, mb * MiB, e)[0] for k, (mb, e) in enumerate([(64, 1), (64, 2), (128, 1), (128, 2)])]
    return tuple(pd.concat([t[n] for t in tables], ignore_index=True) for n in ("runs", "stages", "tasks"))


def test_a_model_fitted_without_a_seed_is_the_one_of_seed_zero():
    """Mutant: fit_group's default ``random_state`` 0 -> 1 (a fit without a seed was not the
    documented deterministic fit of seed 0)."""
    assert fit_group(_raw("a"), kind="amdahl") == fit_group(_raw("a"), kind="amdahl", random_state=0)
    assert fit_group(_raw("a"), kind="amdahl") != fit_group(_raw("a"), kind="amdahl", random_state=1)


def test_stages_without_task_times_are_a_skipped_stage_model_not_a_failed_one(job_tables):
    """Mutant: the ``return None`` after the stage model's DegenerateDataError deleted (the fit
    went on to an unbound model and was recorded as the job's failure)."""
    runs, stages, _ = job_tables
    timeless = stages.assign(executor_run_time_ms=0)
    assert fit_stage_group(runs, timeless, None) is None
    assert fit_group_safe(runs, timeless, None, stage_models=True, runtime_model=False) == [
        ("etl", "stage", "skipped", None, None)]


def test_a_stage_model_fitted_without_a_seed_is_the_one_of_seed_zero(job_tables):
    """Mutant: fit_group_safe's default ``random_state`` for the stage model 0 -> 1 (the stage
    model of a retrain without a seed differed from fit_stage_group's own default)."""
    runs, stages, tasks = job_tables
    ((_, kind, status, art, _),) = fit_group_safe(runs, stages, tasks, stage_models=True, runtime_model=False)
    assert (kind, status) == ("stage", "fit")
    assert art == json.dumps(fit_stage_group(runs, stages, tasks, random_state=0), sort_keys=True)
    assert art != json.dumps(fit_stage_group(runs, stages, tasks, random_state=1), sort_keys=True)
    # Mutant: fit_stage_group's own default ``random_state`` 0 -> 1
    assert json.dumps(fit_stage_group(runs, stages, tasks), sort_keys=True) == art


def test_the_artifacts_json_has_its_keys_sorted():
    """The same fit is the same bytes, whichever path ran it. Mutant: ``sort_keys=True`` -> False
    for the whole-job model's artifact."""
    ((_, kind, status, art, _),) = fit_group_safe(_raw("a"), kind="amdahl")
    assert (kind, status) == ("runtime", "fit")
    assert art == json.dumps(fit_group(_raw("a"), kind="amdahl"), sort_keys=True)


def test_no_runs_and_no_stages_are_a_skipped_stage_model_not_a_failed_one():
    """Mutants: the first ``return None`` of fit_stage_group (no stage rows) deleted, or its
    check (no rows to read the job's name from: an IndexError, recorded as a failure)."""
    assert fit_stage_group(_raw().iloc[:0], None, None) is None
    assert fit_group_safe(_raw().iloc[:0], None, None, stage_models=True, runtime_model=False) == [
        ("", "stage", "skipped", None, None)]


def test_a_single_run_that_read_one_byte_is_enough_for_a_stage_model(job_tables):
    """Mutant: ``input_bytes > 0`` -> ``> 1`` (a job whose one run that read an input read a
    byte got no stage model)."""
    runs, stages, tasks = job_tables
    doc = fit_stage_group(runs.assign(input_bytes=[0, 0, 0, 1]), stages, tasks)
    assert doc["meta"]["training_range"]["input_bytes"] == [0, 1]


def test_tasks_given_as_a_frame_without_rows_or_columns_are_no_tasks(job_tables):
    """Mutant: the conform of the tasks rows deleted (a frame with no columns reached the model,
    which refused it for lacking a run_id column)."""
    runs, stages, _ = job_tables
    assert fit_stage_group(runs, stages, pd.DataFrame()) == fit_stage_group(runs, stages, None)


def test_a_stage_fit_that_raises_is_the_jobs_failed_stage_model(job_tables, monkeypatch):
    """Mutant: the "failed" outcome of the stage branch deleted (the stage model vanished from
    the retrain's outcomes without a word)."""
    runs, stages, tasks = job_tables

    def bad(*a, **k):
        raise ValueError("bad stage rows")

    monkeypatch.setattr(fitting, "fit_stage_group", bad)
    assert fit_group_safe(runs, stages, tasks, stage_models=True, runtime_model=False) == [
        ("etl", "stage", "failed", None, "ValueError: bad stage rows")]


@pytest.mark.parametrize("error", [MemoryError, OSError])
def test_the_machines_fault_during_a_stage_fit_stops_the_retrain(job_tables, monkeypatch, error):
    """Mutant: the ``raise`` of the machine's faults in the stage branch deleted (a full disk
    was recorded as the job's failed stage model, and the job not refit until its runs changed)."""
    runs, stages, tasks = job_tables

    def full(*a, **k):
        raise error("no space left")

    monkeypatch.setattr(fitting, "fit_stage_group", full)
    with pytest.raises(error, match="no space left"):
        fit_group_safe(runs, stages, tasks, stage_models=True, runtime_model=False)


def test_stage_rows_without_a_column_of_the_store_fit_as_rows_with_it_empty(job_tables):
    """Rows read from files written before the store had a column lack it: they are conformed to
    the store's schema, the column empty. Mutant: the conform of the stage rows deleted (the
    model's sort died on the missing column, a KeyError recorded as the job's failure)."""
    runs, stages, tasks = job_tables
    without = fit_stage_group(runs, stages.drop(columns="submission_ms"), tasks)
    assert without == fit_stage_group(runs, stages.assign(submission_ms=None), tasks)
    assert without["meta"]["n_runs"] == 4


def test_a_jobs_runs_are_told_without_its_succeeded_ones_and_three_excluded_runs_are_named():
    """A job whose succeeded run has no use (no wall time) is still told by its other runs.
    Mutants: ``ids.pop("succeeded")`` deleted (the run was told as one of "status
    'succeeded'"); the limit of 3 runs named in the command (_named's ``<= k``, the listing's
    ``<= 3``) -> ``< 3``."""
    what, fix = no_succeeded_run(pd.DataFrame({"run_id": ["a", "b", "c"], "status": ["succeeded", "killed", None]}))
    assert what == "1 run was killed, 1 has status 'unknown'"
    assert fix.startswith("fix what made its runs fail")
    what, fix = no_succeeded_run(pd.DataFrame({"run_id": ["a", "b", "c"], "status": ["excluded"] * 3}))
    assert what == "3 runs are excluded from training"
    assert fix == ("include the runs to learn from again (sparkpredict store edit a b c --include); "
                   "or record a run of the job that succeeds")


def test_runs_still_running_are_told_to_end_or_be_set_aside():
    """Mutant: the fix for running runs deleted (only "record a run of the job that succeeds")."""
    what, fix = no_succeeded_run(pd.DataFrame({"run_id": ["a", "b"], "status": ["running", "running"]}))
    assert what == "2 runs are still running"
    assert fix == ("let the running one end (its last record then says how it ended); a run whose driver is "
                   "gone for good stays running: `sparkpredict store edit RUN_ID --exclude --ended` sets it "
                   "aside; or record a run of the job that succeeds")
