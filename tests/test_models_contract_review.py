"""A review of the models' scikit-learn contract: fractional executor counts in the models that
replay tasks, seeds that must survive saving, a failed refit, and arrays given to predict."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sparkpredict.errors import DegenerateDataError, InputError
from sparkpredict.features.runs import runs_table
from sparkpredict.models.hybrid import JobRuntimeModel
from sparkpredict.models.persist import load_models, save_models
from sparkpredict.models.replay import ReplayRuntimeModel
from sparkpredict.models.stages import StageRuntimeModel
from tests.test_hybrid import synthetic_job

HISTORY = Path(__file__).parent / "data" / "history"


@pytest.fixture(scope="module")
def sort_runs(tmp_path_factory):
    path = tmp_path_factory.mktemp("hist") / "store"
    shutil.copytree(HISTORY, path)
    runs = runs_table(path)
    return str(path), runs[runs.job == "sort"]


def _ask(executors):
    return pd.DataFrame({"job": "sort", "input_bytes": 16e6, "executors": executors})


def test_replay_asks_a_mean_count_at_the_nearest_whole_one(sort_runs):
    path, runs = sort_runs
    m = ReplayRuntimeModel(store=path).fit(runs)
    # 2.9 had picked a 3-executor run as its reference and replayed it on 2 executors
    assert np.array_equal(m.predict(_ask([2.9, 3.2])), m.predict(_ask([3, 3])))
    assert np.array_equal(m.predict(_ask([1.6])), m.predict(_ask([2])))
    with pytest.raises(InputError, match="at least 1 .* got 0.4") as e:
        m.predict(_ask([0.4]))
    assert "--executors" not in e.value.fix  # the Python API, not the CLI


def test_stage_model_asks_a_mean_count_at_the_nearest_whole_one(sort_runs):
    path, runs = sort_runs
    m = StageRuntimeModel(store=path, n_estimators=10).fit(runs)
    # int() read 2.9 as 2, and 0.5, 1 and 1.5 alike
    assert np.array_equal(m.predict(_ask([2.9, 1.4])), m.predict(_ask([3, 1])))
    assert m.predict(_ask([2.9]))[0] != m.predict(_ask([2]))[0]


@pytest.mark.parametrize("seed", [None, np.int64(3)])
def test_a_seed_scikit_learn_accepts_saves_and_loads(seed, tmp_path):
    runs = synthetic_job(sizes=(8, 16, 24), execs=(2, 4, 8))
    m = JobRuntimeModel(kind="amdahl", random_state=seed).fit(runs)
    save_models({"etl": m}, tmp_path / "m")  # np.int64: not JSON serializable
    back = load_models(tmp_path / "m")["etl"]  # None: "corrupt: int() argument ... NoneType"
    assert back.random_state == (None if seed is None else 3)
    q = pd.DataFrame({"input_bytes": [12e9], "executors": [6.0]})
    assert np.allclose(back.predict(q), m.predict(q))


def test_a_seed_that_cannot_be_saved_is_refused_before_fitting():
    with pytest.raises(InputError, match="random_state must be an int or None, got RandomState"):
        JobRuntimeModel(random_state=np.random.RandomState(0)).fit(synthetic_job())
    with pytest.raises(InputError, match="got bool"):
        JobRuntimeModel(random_state=True).fit(synthetic_job())


def test_a_failed_refit_leaves_the_fitted_model_as_it_was():
    runs = synthetic_job().assign(param=lambda d: np.arange(len(d)) % 3 + 1.0)
    m = JobRuntimeModel(kind="gbm").fit(runs)
    q = pd.DataFrame({"input_bytes": [12e9], "executors": [4.0], "param": [2.0]})
    before, state = m.predict(q), {k: v for k, v in vars(m).items() if k.endswith("_")}
    m.set_params(kind="auto")
    with pytest.raises(DegenerateDataError):
        m.fit(runs.drop(columns="param").iloc[:5])  # too few runs for auto
    # the refit had set n_runs_ = 5 and extras_ = [] beside the old component: an IndexError
    assert m.n_runs_ == state["n_runs_"] and m.extras_ == ["param"] and m.name_ == state["name_"]
    assert m.training_range_ == state["training_range_"]
    assert np.array_equal(m.predict(q), before)


def test_predict_on_an_array_says_what_fit_says():
    m = JobRuntimeModel(kind="amdahl").fit(synthetic_job())
    for call in (m.predict, m.predict_interval):
        with pytest.raises(InputError, match="the query must be a runs table with named columns .* got ndarray"):
            call(np.array([[1e9, 4.0]]))


def test_stage_model_seed_saves_and_a_failed_refit_keeps_the_model(sort_runs):
    import json

    path, runs = sort_runs
    m = StageRuntimeModel(store=path, n_estimators=5, random_state=np.int64(3)).fit(runs)
    back = StageRuntimeModel.from_dict(json.loads(json.dumps(m.to_dict())), store=path)  # int64: TypeError
    assert back.random_state == 3 and np.array_equal(back.predict(_ask([2])), m.predict(_ask([2])))
    before, n = m.predict(_ask([2])), m.n_runs_
    with pytest.raises(DegenerateDataError):
        m.fit(runs.assign(run_id="no-such-run"))
    assert m.n_runs_ == n and np.array_equal(m.predict(_ask([2])), before)
    with pytest.raises(InputError, match="random_state must be an int or None"):
        StageRuntimeModel(store=path, random_state=np.random.RandomState(0)).fit(runs)
