"""A question about a resource the history never varied (cores, memory per executor).

Every run of sort in tests/data/history had 1 core and 1024 MiB per executor. Asked about 4
cores, the combined model put the lower bound at 0.12 s (1 core: 2.4 s), a 20x speed-up
from 4x the cores, from a drift measured on sizes and executor counts."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from sparkpredict.models.hybrid import JobRuntimeModel

MB = 10**6
HISTORY = Path(__file__).parent / "data" / "history"
SIZES = np.array([2.0, 8.0, 64.0]) * MB  # inside, at the edge of and beyond the runs' sizes
EXECS = np.array([1.0, 2.0, 3.0, 6.0])  # 6: beyond the runs' counts (1-3)


@pytest.fixture(scope="module")
def runs():
    from sparkpredict.features.runs import runs_table

    r = runs_table(HISTORY)
    return r[r.job == "sort"].reset_index(drop=True)


@pytest.fixture(scope="module")
def model(runs):
    return JobRuntimeModel().fit(runs)


def _grid(**cols):
    S, E = np.meshgrid(SIZES, EXECS)
    return {"input_bytes": S.ravel(), "executors": E.ravel(), **cols}


def _free(m):
    """The same model read as before the rule: the curve at the value asked, the drift alone."""
    old = copy.copy(m)
    old.unvaried_ = {}
    return old


def test_the_resources_the_runs_held_fixed_are_known(runs, model):
    assert set(runs["executor_cores"]) == {1} and set(runs["executor_memory_mb"]) == {1024}
    assert model.unvaried_ == {"executor_cores": 1.0, "executor_memory_mb": 1024.0}
    # a column that varied is not among them, nor one no run recorded (its 1.0 is a stand-in)
    varied = runs.assign(executor_cores=np.where(runs.index % 2 == 0, 1, 2)).drop(columns="executor_memory_mb")
    assert JobRuntimeModel().fit(varied).unvaried_ == {}
    # the study's single kinds keep their published form
    assert JobRuntimeModel(kind="amdahl").fit(runs).unvaried_ == {}


def test_four_cores_cannot_be_more_than_four_times_faster(model):
    one = model.predict_interval(_grid(executor_cores=1.0))
    for cores in (2.0, 4.0, 8.0):
        more = model.predict_interval(_grid(executor_cores=cores))
        # predicted as on the core count the runs had: no speed-up assumed
        np.testing.assert_allclose(more["predicted_runtime_s"], one["predicted_runtime_s"], rtol=1e-12)
        assert np.all(more["lower_s"] >= one["lower_s"] / cores * (1 - 1e-12)), (cores, more["lower_s"])
        assert np.all(more["upper_s"] >= one["upper_s"] * (1 - 1e-12))
    # the drift alone had put it 20x below 1 core's at 1 executor and 8 MB
    q = {"input_bytes": [8 * MB], "executors": [1.0], "executor_cores": 4.0}
    low_one = model.predict_interval(dict(q, executor_cores=1.0))["lower_s"][0]
    assert _free(model).predict_interval(q)["lower_s"][0] < low_one / 10
    assert model.predict_interval(q)["lower_s"][0] == pytest.approx(low_one / 4, rel=1e-9)


def test_less_memory_than_ever_ran_is_no_faster_and_may_be_proportionally_slower(model):
    seen = model.predict_interval(_grid(executor_memory_mb=1024.0))
    half = model.predict_interval(_grid(executor_memory_mb=512.0))
    np.testing.assert_allclose(half["predicted_runtime_s"], seen["predicted_runtime_s"], rtol=1e-12)
    assert np.all(half["lower_s"] >= seen["lower_s"] * (1 - 1e-12))
    assert np.all(half["upper_s"] >= 2 * seen["upper_s"] * (1 - 1e-12))
    # more memory: at most the proportional speed-up, as for cores
    more = model.predict_interval(_grid(executor_memory_mb=4096.0))
    assert np.all(more["lower_s"] >= seen["lower_s"] / 4 * (1 - 1e-12))


def test_the_chance_reads_the_same_bounds(model):
    q = {"input_bytes": [8 * MB], "executors": [1.0], "executor_cores": 4.0}
    low = model.predict_interval(q, 0.9)["lower_s"][0]
    # a limit under the 90% lower bound is met with chance 5% or less
    assert model.chance_within(q, low * 0.999)[0] <= 0.05 + 1e-9
    assert _free(model).chance_within(q, low * 0.999)[0] > 0.05


def test_nothing_changes_inside_the_range(model):
    old = _free(model)
    for q in (_grid(), _grid(executor_cores=1.0), _grid(executor_cores=1.0, executor_memory_mb=1024.0)):
        for conf in (0.5, 0.9):
            new, ref = model.predict_interval(q, conf), old.predict_interval(q, conf)
            for k in new:
                np.testing.assert_allclose(new[k], ref[k], rtol=1e-12, atol=0)
        np.testing.assert_allclose(model.chance_within(q, 4.0), old.chance_within(q, 4.0), rtol=1e-12, atol=0)


def test_any_fitted_curve_is_read_at_the_value_the_runs_had(runs, model):
    # trees over the derived inputs (input per core) answer to the cores asked; the runs'
    # constant cores say nothing about them
    trees = copy.copy(model)
    trees.component_ = JobRuntimeModel(kind="gbm").fit(runs).component_
    one = trees.predict(_grid(executor_cores=1.0))
    assert not np.allclose(_free(trees).predict(_grid(executor_cores=4.0)), one, rtol=1e-3)
    np.testing.assert_allclose(trees.predict(_grid(executor_cores=4.0)), one, rtol=1e-12)


def test_saved_models_keep_the_rule_and_older_ones_load_without_it(model):
    q = _grid(executor_cores=4.0)
    d = json.loads(json.dumps(model.to_dict()))
    again = JobRuntimeModel.from_dict(d)
    assert again.unvaried_ == model.unvaried_
    for k, v in model.predict_interval(q).items():
        np.testing.assert_allclose(again.predict_interval(q)[k], v, rtol=1e-12)
    del d["unvaried"]  # a model saved before the rule: read as then
    older = JobRuntimeModel.from_dict(d)
    assert older.unvaried_ == {}
    for k, v in _free(model).predict_interval(q).items():
        np.testing.assert_allclose(older.predict_interval(q)[k], v, rtol=1e-12)


def test_the_advice_at_four_cores_keeps_its_lower_bound(model):
    from sparkpredict.advise import suggest_executors

    one = suggest_executors("sort", "8MB", models={"sort": model}, executor_cores=1, deadline_s=30)
    four = suggest_executors("sort", "8MB", models={"sort": model}, executor_cores=4, deadline_s=30)
    for a, b in zip(one.candidates, four.candidates):
        assert b.predicted_runtime_s == pytest.approx(a.predicted_runtime_s, rel=1e-12)
        assert b.lower_s >= a.lower_s / 4 * (1 - 1e-12)
    # the advice says the 4 cores are an assumption, and at the runs' 1 core says nothing of it
    said = [w for w in four.warnings if w.startswith("every run of sort used 1 core per executor")]
    assert len(said) == 1 and "asks for 4 cores" in said[0] and "4x speed-up" in said[0], four.warnings
    assert not any("per executor and this asks" in w for w in one.warnings)
    half = suggest_executors("sort", "8MB", models={"sort": model}, executor_memory_mb=512, deadline_s=30)
    assert any("used 1 GiB per executor and this asks for 512 MiB" in w and "2x slow-down" in w
               for w in half.warnings), half.warnings
