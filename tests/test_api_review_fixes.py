"""Stop 36's review of the Python API (driver code, notebooks) and of an installed wheel found
these; each test failed before its fix."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import sparkpredict
from sparkpredict.errors import InputError, StoreError

DATA = Path(__file__).parent / "data"
HISTORY = DATA / "history"


@pytest.fixture(scope="module")
def sort_model():
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.hybrid import JobRuntimeModel

    runs = runs_table(str(HISTORY))
    return JobRuntimeModel().fit(runs[runs["job"] == "sort"])


def test_chance_within_reads_a_duration_and_refuses_what_is_none(sort_model):
    q = {"input_bytes": 16e6, "executors": 2}
    assert sort_model.chance_within(q, "45m") == pytest.approx(sort_model.chance_within(q, 2700))
    for bad in (None, np.array([5.0, 8.0]), "soon", -1):  # TypeError / ValueError before
        with pytest.raises(InputError, match="limit must be a positive number of seconds or a duration"):
            sort_model.chance_within(q, bad)


def test_fit_of_arrays_without_column_names_is_refused(sort_model):
    from sparkpredict.models.hybrid import JobRuntimeModel

    with pytest.raises(InputError, match="X must be a runs table with named columns .* got ndarray"):
        JobRuntimeModel().fit(np.ones((8, 3)), np.ones(8))  # AttributeError: no .values
    with pytest.raises(InputError, match="runs must be a runs table"):
        JobRuntimeModel().fit(np.ones((8, 3)))


def test_a_zero_dimensional_array_of_counts_is_refused_as_a_count_is():
    with pytest.raises(InputError, match="executor_counts must list executor counts"):
        sparkpredict.suggest_executors("sort", "64MB", store=str(HISTORY), executor_counts=np.array(4))


def test_explain_and_slowest_runs_take_a_threshold_as_a_percentage():
    from sparkpredict import monitor

    store = monitor.DEFAULT_TRAINING_STORE
    slow = monitor.slowest_runs("wordcount", str(store), threshold="10%", top=2)
    same = monitor.slowest_runs("wordcount", str(store), threshold=0.1, top=2)
    assert [r.run_id for r in slow] == [r.run_id for r in same]
    with pytest.raises(InputError, match="threshold 'lots' is not a fraction"):
        monitor.slowest_runs("wordcount", str(store), threshold="lots")
    with pytest.raises(InputError, match="for 10% give 0.1"):
        monitor.slowest_runs("wordcount", str(store), threshold="1000%")


def test_store_read_refuses_an_unknown_column_or_form():
    from sparkpredict.store import io

    st = io.open(str(HISTORY))
    with pytest.raises(StoreError, match="table 'runs' has no column\\(s\\) 'nope'") as e:
        st.read("runs", columns=["run_id", "nope"])
    assert "input_bytes" in e.value.fix
    with pytest.raises(StoreError, match="no form 'polars'"):
        st.read("runs", form="polars")  # type: ignore[arg-type]
    assert list(st.read("runs", columns=["run_id"]).columns) == ["run_id"]


def test_edit_runs_of_none_is_refused(tmp_path):
    from sparkpredict.store import edit_runs

    with pytest.raises(InputError, match="run_ids must be a run id or a list of them, got None"):
        edit_runs(str(HISTORY), None, excluded=True)  # type: ignore[arg-type]


def test_one_name_given_as_a_string_is_that_name_not_its_letters(tmp_path):
    from sparkpredict.evaluate import evaluate
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_all, save_models

    runs = runs_table(str(HISTORY))
    sort = runs[runs["job"] == "sort"]
    ev = evaluate(sort, models="amdahl", include_study=False, splits="cv3")
    assert set(ev.rows["model"]) == {"amdahl"} and set(ev.rows["split"]) == {"cv3"}
    with pytest.raises(InputError, match="unknown metric 'nope'"):
        ev.table("cv3", "nope")
    save_models(fit_all(sort), tmp_path / "m")
    assert list(sparkpredict.load_models(str(tmp_path / "m"), jobs="sort")) == ["sort"]


def test_listener_settings_refuse_values_of_the_wrong_type(tmp_path):
    from sparkpredict.capture.listener import listener_conf

    with pytest.raises(InputError, match="tasks must be True or False, got 'false'"):
        listener_conf(store=str(tmp_path / "s"), tasks="false")  # it recorded every task
    assert listener_conf(store=str(tmp_path / "s"), tasks=np.bool_(False))["spark.sparkpredict.tasks"] == "false"
    for bad in (5, b"/tmp/x"):  # the folder "5", or "b'/tmp/x'", under the current one
        with pytest.raises(StoreError, match="the store must be a path or URI"):
            listener_conf(store=bad)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="attach\\(\\) takes a SparkSession builder, got None"):
        sparkpredict.attach(None)


def test_hasattr_of_a_dotted_name_is_false():
    assert not hasattr(sparkpredict, "x.y")  # ModuleNotFoundError
    assert getattr(sparkpredict, "no such thing", 7) == 7


def test_listener_conf_template_prints_the_commented_cluster_file(capsys):
    from sparkpredict.cli import main

    assert main(["listener", "conf", "--template"]) == 0
    out = capsys.readouterr().out
    repo = (Path(__file__).parents[1] / "conf" / "spark-defaults.conf.sparkpredict").read_text()
    assert out == repo
    assert main(["listener", "conf", "--template", "--jar", "hdfs:///x.jar"]) == 2
    assert "fix: drop --template" in capsys.readouterr().err


def test_explain_top_one_says_its_run(capsys):
    from sparkpredict import monitor
    from sparkpredict.cli import main

    assert main(["explain", "--job", "wordcount", "--top", "1", "--store", str(monitor.DEFAULT_TRAINING_STORE)]) == 0
    out = capsys.readouterr().out
    assert "its run furthest above its runtime model" in out and "its 1 runs" not in out


def test_the_monitors_fixes_name_no_script_a_wheel_lacks(tmp_path):
    # "benchmarks/make_interference_dataset.py records both": not in the wheel; the label is
    from sparkpredict.models.degradation import DegradationModel

    with pytest.raises(Exception) as e:
        DegradationModel().fit(pd.DataFrame({"degradation": [0.1], "expected_ms": [1.0]}))
    fix = getattr(e.value, "fix", "")
    assert "spark.sparkpredict.interference=KIND:N" in fix and "from a checkout" in fix, fix
