"""Job parameters beyond the input size: declared by a run as ``spark.sparkpredict.param.<name>``
(``submit --param``), read into the runs table, used by the model and by the advice."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from sparkpredict import store as store_mod
from sparkpredict import suggest_executors
from sparkpredict.cli import main
from sparkpredict.errors import InputError
from sparkpredict.features.runs import feature_columns, runs_table

GB = 10**9


def law(size_gb, e, iterations):
    """True runtime: 10 s per GB and iteration, spread over the executors, + 20 s fixed."""
    return 10.0 * iterations * size_gb / e + 20.0


def history(path, job="ml", iterations=(1, 4), declare=True):
    rng = np.random.default_rng(1)
    runs, k = [], 0
    for it in iterations:
        for s in (10, 20, 40, 80):
            for e in (1, 2, 4, 8):
                k += 1
                props = {"spark.executor.instances": str(e)}
                if declare:
                    props["spark.sparkpredict.param.iterations"] = str(it)
                t = law(s, e, it) * (1 + 0.02 * rng.standard_normal())
                runs.append({"run_id": f"app-{k:03d}", "app_id": f"app-{k:03d}", "job": job, "app_name": job,
                             "status": "succeeded", "start_ms": 1_700_000_000_000 + k * 1000,
                             "wall_ms": int(t * 1000), "updated_ms": 1, "executors_requested": e,
                             "executors_max": e, "executor_cores": 4, "executor_memory_mb": 4096,
                             "input_bytes": s * GB, "properties_json": json.dumps(props)})
    st = store_mod.open(path, create=True)
    st.append({"runs": pd.DataFrame(runs)})
    return str(path)


@pytest.fixture(scope="module")
def ml_store(tmp_path_factory):
    return history(tmp_path_factory.mktemp("params") / "store")


def test_declared_parameters_become_model_features(ml_store):
    t = runs_table(ml_store)
    assert sorted(t["iterations"].unique()) == [1.0, 4.0]
    assert "iterations" in feature_columns(t)


def test_advice_follows_the_parameter(ml_store):
    one = suggest_executors("ml", "30GB", params={"iterations": 1}, executor_counts=[2, 4, 8], store=ml_store)
    four = suggest_executors("ml", "30GB", params={"iterations": "4"}, executor_counts=[2, 4, 8], store=ml_store)
    assert one.params == {"iterations": 1.0} and four.params == {"iterations": 4.0}
    for a, it in ((one, 1), (four, 4)):
        for c in a.candidates:
            truth = law(30, c.executors, it)
            assert abs(c.predicted_runtime_s - truth) / truth < 0.2, (it, c)
    assert not any("not given" in w for w in one.warnings)
    # a deadline that one iteration meets on 2 executors needs more executors for four
    d = suggest_executors("ml", "30GB", deadline_s=law(30, 2, 1) * 1.3, params={"iterations": 4},
                          executor_counts=[2, 4, 8], store=ml_store)
    assert d.executors > 2


def test_a_missing_parameter_is_taken_from_the_latest_run_with_a_warning(ml_store):
    a = suggest_executors("ml", "30GB", executor_counts=[2, 4], store=ml_store)
    assert a.params == {"iterations": 4.0}  # the latest run declared 4
    assert any("iterations=4" in w and "not given" in w for w in a.warnings)


def test_a_model_folder_assumes_the_same_latest_run_as_the_store(ml_store, tmp_path, capsys):
    """A folder from `sparkpredict fit`, asked without the store, used the training median
    (iterations=2.5, which no run declared) where the store answered with the latest run's 4."""
    from sparkpredict.models.persist import fit_all, save_models

    folder = tmp_path / "models"
    save_models(fit_all(runs_table(ml_store), kind="amdahl"), folder)
    a = suggest_executors("ml", "30GB", executor_counts=[2, 4], models=str(folder))
    assert a.params == {"iterations": 4.0}
    assert any("iterations=4" in w and "not given" in w for w in a.warnings)
    # the CLI takes both: the folder's model, the store's runs for the warnings
    assert main(["suggest", "--job", "ml", "--input-size", "30GB", "--models", str(folder),
                 "--store", ml_store, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"] == {"iterations": 4.0}


@pytest.mark.parametrize("params,needle", [
    ({"iteration": 4}, "no recorded parameter 'iteration' (its history declares iterations)"),
    ({"iterations": "many"}, "'many' is not a number"),
    ({"iterations": float("inf")}, "is not a finite number"),
    ([("iterations", 4)], "params must map names to numbers"),
])
def test_bad_parameters_name_the_fix(ml_store, params, needle):
    with pytest.raises(InputError) as e:
        suggest_executors("ml", "30GB", params=params, store=ml_store)
    assert needle in str(e.value)


def test_a_misspelt_parameter_is_refused_before_the_fit_writes_its_cache(tmp_path, monkeypatch):
    """The name is checked against what the store's runs declare before the job's model is fitted,
    so the refused call leaves no fit cache behind (nothing written)."""
    from sparkpredict.config import CACHE_ENV

    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    path = history(tmp_path / "store")
    with pytest.raises(InputError, match="no recorded parameter 'iteration'"):
        suggest_executors("ml", "30GB", params={"iteration": 4}, store=path)
    assert not cache.exists() or not any(p.is_file() for p in cache.rglob("*"))
    suggest_executors("ml", "30GB", params={"iterations": 4}, store=path)  # the corrected call fits
    assert any(p.is_file() for p in cache.rglob("*"))


def test_a_history_without_parameters_rejects_them(tmp_path):
    path = history(tmp_path / "store", declare=False, iterations=(1,))
    with pytest.raises(InputError, match="its history declares none"):
        suggest_executors("ml", "30GB", params={"iterations": 2}, store=path)


def test_cli_param(ml_store, capsys):
    assert main(["suggest", "--job", "ml", "--input-size", "30GB", "--store", ml_store,
                 "--param", "iterations=4"]) == 0
    assert "job parameters: iterations=4" in capsys.readouterr().out
    for bad, needle in (("iterations", "cannot read --param 'iterations'"),
                        ("2x=1", "cannot read --param '2x=1'"),
                        ("iterations=lots", "'lots' is not a number")):
        assert main(["suggest", "--job", "ml", "--input-size", "30GB", "--store", ml_store,
                     "--param", bad]) == 2
        assert needle in capsys.readouterr().err


@pytest.mark.spark
def test_the_listener_records_declared_parameters(spark_app, tmp_path):
    store = tmp_path / "store"
    conf = {"spark.sparkpredict.param.iterations": "25", "spark.sparkpredict.param.k": "three",
            "spark.sparkpredict.param.runtime_s": "1"}  # not a number; a reserved column name
    with spark_app(store, job="params", conf=conf) as spark:
        spark.range(100).count()
    t = runs_table(str(store))
    assert list(t["iterations"]) == [25.0]
    assert t["k"].isna().all()          # declared but not a number: no value
    wall_s = store_mod.open(str(store)).runs()["wall_ms"] / 1000.0
    assert list(t["runtime_s"]) == list(wall_s)  # a parameter never overrides a runs-table column


def test_a_history_mixing_sweep_runs_with_runs_started_alone_is_warned_of(tmp_path):
    """A sweep's runs share one warm driver JVM; a submitted run pays a cold one (a reviewer's
    wordcount: 1-3 s swept, 15 s submitted): advice from the mix under-predicted the submitted
    runs 5-8x without a word."""
    path = history(tmp_path / "store")
    runs = store_mod.open(path).runs()
    swept = runs.head(20).copy()
    swept["properties_json"] = [json.dumps({**json.loads(p), "spark.sparkpredict.sweep.key": "wordcount|x"})
                                for p in swept["properties_json"]]
    swept["updated_ms"] = 2
    store_mod.open(path).append({"runs": swept})
    a = suggest_executors("ml", "30GB", params={"iterations": 4}, executor_counts=[2, 4], store=path)
    (w,) = [w for w in a.warnings if "mixes" in w]
    assert "mixes 20 runs of `sparkpredict sweep` with 12 started on their own" in w
    only = suggest_executors("ml", "30GB", params={"iterations": 4}, executor_counts=[2, 4],
                             store=history(tmp_path / "plain"))
    assert not [w for w in only.warnings if "mixes" in w]
