"""Stage-level forests with task waves, on runs generated from a known per-task-time relation."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from sparkpredict import store as store_mod
from sparkpredict.errors import (
    DegenerateDataError,
    InputError,
    NotFittedError,
    UnknownJobError,
)
from sparkpredict.features.stages import file_split_tasks, waves
from sparkpredict.models.stages import StageRuntimeModel

MiB = 2**20
SPLIT = 32 * MiB
PARTITIONS = 8
HEAD_MS, GAP_MS, TAIL_MS = 1000.0, 200.0, 500.0
# Known per-task time of each stage: fixed ms + ms per MiB the task reads.
STAGES = [  # (call site, fixed ms, ms per MiB, share of the input it reads, shuffle?)
    ("load at etl.py:10", 40.0, 25.0, 1.0, False),
    ("groupBy at etl.py:20", 20.0, 10.0, 0.4, True),
    ("collect at etl.py:30", 50.0, 0.0, 0.0, True),
]


def task_ms_true(stage: int, bytes_per_task: float) -> float:
    _, fixed, per_mib, _, _ = STAGES[stage]
    return fixed + per_mib * bytes_per_task / MiB


def make_run(k: int, size: int, executors: int, cores: int = 2, noise: float = 0.02, rng=None,
             local: bool = False):
    """One run's store rows: stages in sequence, tasks in ideal waves. Returns (tables, wall_s).

    ``local``: the run of a sweep on ``local[executors]`` with spark.executor.instances set, as
    the listener records it: one driver-executor holding ``executors`` task threads."""
    rng = rng or np.random.default_rng(k)
    run_id = f"app-{k:03d}"
    if local:
        cores = 1
    slots = executors * cores
    props = {"spark.sql.shuffle.partitions": str(PARTITIONS), "spark.sql.files.maxPartitionBytes": "32m",
             "spark.executor.cores": str(cores), "spark.executor.memory": "1g",
             "spark.sql.adaptive.enabled": "false", "spark.serializer": "org.apache.spark.serializer.KryoSerializer"}
    t = 1_000_000.0 * k
    start, now = t, t + HEAD_MS
    stage_rows, task_rows = [], []
    base = 5 * k  # stage ids change from run to run (earlier stages of the application)
    tid = 0
    for i, (name, _, _, share, shuffle) in enumerate(STAGES):
        sid = base + i
        b_in = size * share if share else 8 * 1024
        n = file_split_tasks(b_in, slots, SPLIT) if i == 0 else (PARTITIONS if i == 1 else 1)
        per = task_ms_true(i, b_in / n) if share else STAGES[i][1]
        durs = per * np.exp(rng.normal(0, noise, n))
        launches = np.empty(n)
        free = [now] * slots  # ideal list scheduling of the stage's tasks
        for j in range(n):
            m = int(np.argmin(free))
            launches[j] = free[m]
            free[m] += durs[j]
        done = float((launches + durs).max())
        stage_rows.append({
            "run_id": run_id, "job_id": i, "stage_id": sid, "stage_attempt_id": 0, "name": name,
            "num_tasks": n, "parent_stage_ids_json": json.dumps([sid - 1] if i else []),
            "submission_ms": int(now), "completion_ms": int(math.ceil(done)), "duration_ms": int(math.ceil(done - now)),
            "status": "succeeded", "num_task_rows": n,
            "executor_run_time_ms": int(durs.sum()), "input_bytes": int(b_in) if not shuffle else 0,
            "shuffle_read_bytes": int(b_in) if shuffle else 0,
            "shuffle_write_bytes": int(size * 0.4) if i == 0 else 0,
            "input_records": int(b_in / 100) if not shuffle else 0,
            "shuffle_read_records": int(b_in / 100) if shuffle else 0})
        for j in range(n):
            task_rows.append({"run_id": run_id, "stage_id": sid, "stage_attempt_id": 0, "task_id": tid,
                              "task_index": j, "attempt": 0,
                              "executor_id": "driver" if local else str(j % executors),
                              "launch_ms": int(launches[j]), "finish_ms": int(launches[j] + durs[j]),
                              "duration_ms": int(launches[j] + durs[j]) - int(launches[j]), "status": "SUCCESS"})
            tid += 1
        now = done + GAP_MS
    end = now - GAP_MS + TAIL_MS
    run = {"run_id": run_id, "app_id": run_id, "job": "etl", "status": "succeeded", "start_ms": int(start),
           "end_ms": int(end), "wall_ms": int(end - start), "executors_requested": executors,
           "executors_max": executors, "executor_cores": cores, "executor_memory_mb": 1024,
           "task_slots": slots, "input_bytes": size, "properties_json": json.dumps(props), "updated_ms": int(end)}
    if local:
        props.pop("spark.executor.cores")
        props["spark.executor.instances"] = str(executors)
        run.update(master=f"local[{executors}]", executors_max=1, executor_cores=executors,
                   properties_json=json.dumps(props))
    return {"runs": pd.DataFrame([run]), "stages": pd.DataFrame(stage_rows),
            "tasks": pd.DataFrame(task_rows)}, (end - start) / 1000


SIZES = [64 * MiB, 128 * MiB, 256 * MiB, 512 * MiB, 1024 * MiB]


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """A store with the job at 5 sizes x 3 executor counts, and the true runtimes."""
    path = tmp_path_factory.mktemp("stage-store") / "store"
    st = store_mod.open(path, create=True)
    truth, k = {}, 0
    for size in SIZES:
        for e in (1, 2, 3):
            tables, wall = make_run(k, size, e)
            st.append(tables)
            truth[f"app-{k:03d}"] = (size, e, wall)
            k += 1
    runs = st.runs()
    runs["executors"] = runs["executors_requested"]
    runs["runtime_s"] = runs["wall_ms"] / 1000
    return path, runs, truth


def test_waves_arithmetic():
    assert waves(8, 2) == 4 and waves(9, 2) == 5 and waves(1, 64) == 1 and waves(0, 4) == 0
    assert list(waves(np.array([16, 17, 3]), np.array([4, 4, 4]))) == [4, 5, 1]


def test_forest_recovers_known_per_task_time_and_predicts_an_absent_size(history):
    path, runs, truth = history
    held = runs["input_bytes"] == 256 * MiB   # a size absent from training
    model = StageRuntimeModel(store=path, n_estimators=50).fit(runs[~held])
    assert model.n_runs_ == 12 and model.training_range_["input_bytes"] == (64 * MiB, 1024 * MiB)
    test = runs[held]
    pred = model.predict(test)
    real = np.array([truth[r][2] for r in test["run_id"]])
    mape = float(np.mean(np.abs(pred - real) / real))
    assert mape < 0.05, (pred, real)
    # The per-task relation itself: the load stage at 256 MiB on 2 executors reads 32 MiB tasks.
    plan = model.stage_plan("etl", 256 * MiB, 2)
    load = plan[plan["signature"].str.startswith("load at etl.py:10")].iloc[0]
    assert load["num_tasks"] == 8 and load["waves"] == 2
    est = float(model._task_ms_trees(plan.loc[[load.name]]).mean())
    assert est == pytest.approx(task_ms_true(0, 32 * MiB), rel=0.05)
    # Per-stage Er on the held-out size is small, and every task count is exactly right.
    er = model.stage_errors(test)
    assert set(er["signature"]) == set(model.signatures_)
    assert (er["er_stage"] < 0.1).all() and (er["tasks_exact"] == 1).all()


def test_a_local_sweep_counts_its_threads_as_the_executors_asked_for(tmp_path):
    # local[E] records one executor of E threads; queries ask for E executors of one core each,
    # so the plan must give E slots (read as 1 executor x E cores, E executors got E x E slots).
    st = store_mod.open(tmp_path / "store", create=True)
    truth, k = {}, 0
    for size in SIZES:
        for e in (1, 2, 3):
            tables, wall = make_run(k, size, e, local=True)
            st.append(tables)
            truth[f"app-{k:03d}"] = wall
            k += 1
    runs = st.runs()
    runs["executors"] = runs["executors_requested"]
    runs["runtime_s"] = runs["wall_ms"] / 1000
    held = runs["input_bytes"] == 256 * MiB
    model = StageRuntimeModel(store=tmp_path / "store", n_estimators=50).fit(runs[~held])
    plan = model.stage_plan("etl", 256 * MiB, 3)
    assert set(plan["task_slots"]) == {3.0} and set(plan["executors"]) == {3.0}
    assert set(plan["executor_cores"]) == {1.0}
    test = runs[held]   # queried as a user asks: E executors, cores as recorded
    pred = model.predict(test[["job", "input_bytes", "executors"]])
    real = np.array([truth[r] for r in test["run_id"]])
    assert float(np.mean(np.abs(pred - real) / real)) < 0.05, (pred, real)


def test_larger_input_is_predicted_by_counting_waves(history):
    path, runs, _ = history
    model = StageRuntimeModel(store=path, n_estimators=50).fit(runs)
    _tables, wall = make_run(99, 4096 * MiB, 2, noise=0.0)   # 4x the largest size trained on
    X = pd.DataFrame({"job": ["etl"], "input_bytes": [4096 * MiB], "executors": [2]})
    pred = float(model.predict(X)[0])
    assert pred == pytest.approx(wall, rel=0.10)
    plan = model.stage_plan("etl", 4096 * MiB, 2)
    assert plan["num_tasks"].max() == 128  # 4 GiB / 32 MiB splits
    iv = model.predict_interval(X, 0.9)
    assert iv["lower_s"][0] <= iv["predicted_runtime_s"][0] <= iv["upper_s"][0]


def test_feature_importances_and_fit_is_deterministic(history):
    path, runs, _ = history
    a = StageRuntimeModel(store=path, n_estimators=20, mode="shared").fit(runs)
    b = StageRuntimeModel(store=path, n_estimators=20, mode="shared").fit(runs)
    assert a.feature_importances_.sum() == pytest.approx(1.0)
    assert np.array_equal(a.predict(runs.head(3)), b.predict(runs.head(3)))
    assert np.isfinite(a.cv_mape_) and a.cv_mape_ < 0.2
    per_sig = StageRuntimeModel(store=path, n_estimators=20, mode="per_signature").fit(runs)
    assert set(per_sig.signature_importances_) == set(per_sig.signatures_)


def test_errors_are_clear(history, tmp_path):
    path, runs, _ = history
    with pytest.raises(NotFittedError):
        StageRuntimeModel(store=path).predict(runs)
    with pytest.raises(DegenerateDataError, match="run_id"):
        StageRuntimeModel(store=path).fit(runs.drop(columns="run_id"))
    model = StageRuntimeModel(store=path, n_estimators=5).fit(runs)
    with pytest.raises(UnknownJobError, match="no training runs of job 'other'"):
        model.predict(pd.DataFrame({"job": ["other"], "input_bytes": [MiB], "executors": [1]}))


def test_replay_model_predicts_other_executor_counts_and_sizes_from_a_single_run(history):
    from sparkpredict.models.replay import ReplayRuntimeModel

    path, runs, truth = history
    one = runs[(runs["input_bytes"] == 256 * MiB) & (runs["executors"] == 1)]
    model = ReplayRuntimeModel(store=path).fit(one)     # what the advisor has for a new job
    assert model.n_runs_ == 1 and abs(model.self_errors_[one["run_id"].iloc[0]]) < 0.01
    same_size = runs[(runs["input_bytes"] == 256 * MiB) & (runs["executors"] > 1)]
    pred = model.predict(same_size)
    real = np.array([truth[r][2] for r in same_size["run_id"]])
    assert np.all(np.abs(pred - real) / real < 0.03), (pred, real)
    other = runs[runs["input_bytes"] == 1024 * MiB]      # 4x the size it saw
    pred = model.predict(other)
    real = np.array([truth[r][2] for r in other["run_id"]])
    assert np.mean(np.abs(pred - real) / real) < 0.10, (pred, real)
    iv = model.predict_interval(other, 0.9)
    assert np.all(iv["lower_s"] < iv["predicted_runtime_s"]) and np.all(iv["predicted_runtime_s"] < iv["upper_s"])


def test_combining_stage_times_by_replay_agrees_with_waves_on_sequential_stages(history):
    path, runs, truth = history
    held = runs["input_bytes"] == 512 * MiB
    waves_m = StageRuntimeModel(store=path, n_estimators=20).fit(runs[~held])
    sim_m = StageRuntimeModel(store=path, n_estimators=20, combine="simulate").fit(runs[~held])
    test = runs[held]
    real = np.array([truth[r][2] for r in test["run_id"]])
    a, b = waves_m.predict(test), sim_m.predict(test)
    # This job's stages never overlap, so both ways of adding stage times must agree and be right.
    assert np.allclose(a, b, rtol=0.03)
    assert np.mean(np.abs(b - real) / real) < 0.05
    with pytest.raises(InputError, match="combine"):
        StageRuntimeModel(store=path, combine="sum").fit(runs)


def test_forest_arrays_predict_exactly_like_the_scikit_learn_forest():
    from sklearn.ensemble import RandomForestRegressor

    from sparkpredict.models.forest_json import forest_from_dict, forest_to_dict

    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 5)) * [1, 10, 100, 1e6, 1e9]
    y = X[:, 0] ** 2 + np.sin(X[:, 1]) + (X[:, 3] > 0)
    rf = RandomForestRegressor(n_estimators=20, random_state=0, oob_score=True).fit(X, y)
    back = forest_from_dict(json.loads(json.dumps(forest_to_dict(rf))))
    Xq = rng.normal(size=(500, 5)) * [1, 10, 100, 1e6, 1e9]
    assert np.array_equal(back.predict(Xq), rf.predict(Xq))
    assert all(np.array_equal(a.predict(Xq), b.predict(Xq)) for a, b in zip(back.estimators_, rf.estimators_))
    assert np.array_equal(back.oob_prediction_, rf.oob_prediction_)
    with pytest.raises(ValueError, match="sparkpredict.forest"):
        forest_from_dict({"format": "pickle", "version": 1})


def test_stage_model_json_round_trip_predicts_the_same(history, tmp_path):
    path, runs, _ = history
    model = StageRuntimeModel(store=path, random_state=1).fit(runs)
    doc = json.loads(json.dumps(model.to_dict()))  # JSON only: no pickle, no estimator objects
    back = StageRuntimeModel.from_dict(doc, store=path)
    X = pd.DataFrame({"job": runs["job"].iloc[0], "input_bytes": [100 * MiB, 700 * MiB, 3000 * MiB],
                      "executors": [1, 2, 5]})
    a, b = model.predict_interval(X), back.predict_interval(X)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert back.cv_mape_ == model.cv_mape_ and back.name_ == model.name_
    # The runs it was fitted on must still be in the store it is loaded against.
    other = store_mod.open(tmp_path / "other", create=True)
    other.append(make_run(99, 64 * MiB, 1)[0])
    with pytest.raises(DegenerateDataError, match="refit"):
        StageRuntimeModel.from_dict(doc, store=other)
    with pytest.raises(InputError, match="retrain --force"):
        StageRuntimeModel.from_dict({**doc, "version": 99}, store=path)


def test_stage_and_replay_models_follow_scikit_learns_parameter_contract(history):
    import pickle

    from sklearn.base import clone, is_regressor

    from sparkpredict.models.replay import ReplayRuntimeModel

    for m in (StageRuntimeModel(store="S", mode="shared", n_estimators=7), ReplayRuntimeModel(store="S")):
        c = clone(m)
        assert c is not m and c.get_params() == m.get_params() and is_regressor(c)
    assert StageRuntimeModel().set_params(n_estimators=9).n_estimators == 9
    # A fitted model pickles (joblib too, which pickles) and predicts the same after: the
    # forests' class was once local to a function, which pickle cannot name.
    path, runs, _ = history
    X = pd.DataFrame({"job": runs["job"].iloc[0], "input_bytes": [100 * MiB, 3000 * MiB], "executors": [1, 5]})
    for m in (StageRuntimeModel(store=path, n_estimators=5).fit(runs), ReplayRuntimeModel(store=path).fit(runs)):
        back = pickle.loads(pickle.dumps(m))
        a, b = m.predict_interval(X), back.predict_interval(X)
        assert all(np.array_equal(a[k], b[k]) for k in a), type(m).__name__
        assert back.get_params().keys() == m.get_params().keys()


def test_stage_and_replay_models_repr_their_parameters():
    """As JobRuntimeModel's: the class and its constructor parameters, not ``<... at 0x...>``."""
    from sparkpredict.models.replay import ReplayRuntimeModel

    r = repr(StageRuntimeModel(store="S", mode="shared", n_estimators=7))
    assert r.startswith("StageRuntimeModel(") and "0x" not in r
    assert all(f"{k}=" in r for k in StageRuntimeModel().get_params())
    assert "mode='shared'" in r and "n_estimators=7" in r and "store='S'" in r
    r = repr(ReplayRuntimeModel(store="S", host_cores=4))
    assert r.startswith("ReplayRuntimeModel(") and "host_cores=4" in r and "0x" not in r
    assert all(f"{k}=" in r for k in ReplayRuntimeModel().get_params())
    # tables print as their shapes: the rows of a history are no repr
    r = repr(ReplayRuntimeModel(tables={"runs": pd.DataFrame({"run_id": ["a", "b"]}), "tasks": None}))
    assert "tables={'runs': <DataFrame 2x1>, 'tasks': None}" in r


def test_the_stage_forest_module_imports_scikit_learn_only_to_build_a_forest(history, tmp_path):
    """The CLI's fast path and a JSON-saved model predict without scikit-learn; only building a
    forest (fit) imports it, from the module that defines the forest class."""
    import subprocess
    import sys

    path, runs, _ = history
    doc = tmp_path / "stage.json"
    doc.write_text(json.dumps(StageRuntimeModel(store=path, n_estimators=5).fit(runs).to_dict()))
    code = ("import json, sys; import sparkpredict.models.stage_forest; "
            "from sparkpredict.models.stages import StageRuntimeModel; "
            f"m = StageRuntimeModel.from_dict(json.load(open({str(doc)!r})), store={str(path)!r}); "
            "m.predict({'job': [m.runs_['job'].iloc[0]], 'input_bytes': [2**27], 'executors': [2]}); "
            "print('sklearn' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
