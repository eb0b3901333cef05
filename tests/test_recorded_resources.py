"""What the runs recorded about their executors, read as Spark reads it: a resource no run
recorded, spark.task.cpus in the task slots, Spark's size strings, dynamic allocation's mean
counts; and the budget's warning when the deadline's fallback chose."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from test_advise import advise
from test_advise_history import history, make_store

from sparkpredict import suggest_executors
from sparkpredict.errors import DegenerateDataError
from sparkpredict.features import stages as F
from sparkpredict.models.stage_plan import plan_stages
from sparkpredict.units import parse_memory_mb, spark_size


@pytest.fixture(scope="module")
def unrecorded_store(tmp_path_factory):
    runs, stages = history()
    runs["executor_cores"] = None
    runs["executor_memory_mb"] = None
    return make_store(tmp_path_factory.mktemp("unrecorded") / "store", (runs, stages))


def test_resources_no_run_recorded_are_neither_defaults_nor_extrapolation(unrecorded_store):
    a = suggest_executors("etl", "30GB", deadline_s="7m30s", store=unrecorded_store, max_executors=16)
    # the fit's stand-in (1 core, 1 MiB) is not offered as the runs' configuration
    assert a.executor_cores is None and a.executor_memory_mb is None
    assert a.chosen.input_per_memory is None
    assert set(a.training_range) == {"input_bytes", "executors"}
    # a real executor asked about is no "8192x the runs' largest", and changes nothing
    b = suggest_executors("etl", "30GB", deadline_s="7m30s", store=unrecorded_store, max_executors=16,
                          executor_cores=8, executor_memory_mb="8g")
    assert (b.executors, b.predicted_runtime_s, b.upper_s) == (a.executors, a.predicted_runtime_s, a.upper_s)
    assert not any("memory" in n or "cores" in n for n in b.extrapolation_notes())
    assert a.meets_deadline is True  # 3000/E + 20 <= 450 from E = 7, inside the runs' counts


def test_time_budget_warning_when_no_count_meets_the_deadline():
    # T = 3000/E + 30, upper 1.1 T: none is predicted within 60 s, and E = 20 is the fastest by
    # its upper bound; E <= 3 fit the budget 0.95 h, so "no candidate fits the budget" would be false
    a = advise(objective="time", deadline_s=60, budget=0.95, max_executors=20)
    assert a.executors == 20 and a.meets_deadline is False
    said = [w for w in a.warnings if "budget" in w]
    assert said == [("the count given, the one fastest by its upper bound, costs up to 1.10 executor-h by "
                    "the 90% interval's upper bound, over the budget 0.95 executor-h (predicted 1.00 executor-h): with no "
                    "count meeting the deadline, the budget did not steer the choice")]


def test_one_executor_count_without_tasks_names_the_counts(tmp_path):
    st = make_store(tmp_path / "store", history(execs=(4,)))
    with pytest.raises(DegenerateDataError) as exc:
        suggest_executors("etl", "30GB", store=st)
    # the whole-job model's reason first, then why no replay could stand in
    assert exc.value.message.startswith("no runtime equation can be fitted to these 8 runs "
                                        "(4 input sizes, 1 executor count)")
    assert "task rows" in exc.value.message
    assert exc.value.fix.startswith("record runs with at least two executor counts")


def _one_stage_run(props, task_slots):
    runs = pd.DataFrame([{"run_id": "r1", "job": "j", "input_bytes": 10**9, "executors_max": 2, "executors": 2,
                          "executor_cores": 4, "executor_memory_mb": 4096, "task_slots": task_slots,
                          "properties_json": json.dumps(props)}])
    stages = pd.DataFrame([{"run_id": "r1", "stage_id": 0, "stage_attempt_id": 0, "name": "count at x.py:1",
                            "num_tasks": 8, "status": "succeeded", "input_bytes": 10**9,
                            "executor_run_time_ms": 8000, "submission_ms": 0, "completion_ms": 4000,
                            "duration_ms": 4000}])
    return F.stage_table(runs, stages)


@pytest.mark.parametrize("props", [{"spark.task.cpus": "2"}, {}], ids=["property", "from-slots"])
def test_task_cpus_hold_for_the_query_slots(props):
    # 2 executors x 4 cores, 2 cores a task: 4 slots, 8 tasks in 2 waves
    st = _one_stage_run(props, task_slots=4)
    assert st["task_slots"].tolist() == [4.0] and st["waves"].tolist() == [2.0]
    assert st["default_parallelism"].tolist() == [8.0]  # Spark's default: the total cores
    plan = plan_stages(st, {s: g for s, g in st.groupby("signature")}, "r1", 10**9, 2, 4, 4096)
    assert plan["task_slots"].tolist() == [4.0] and plan["waves"].tolist() == [2.0]
    wider = plan_stages(st, {s: g for s, g in st.groupby("signature")}, "r1", 10**9, 3, 4, 4096)
    assert wider["task_slots"].tolist() == [6.0]


def test_spark_size_strings():
    assert spark_size("512b", "m") == 512            # a "b" is bytes, not the bare number's unit
    assert spark_size("512", "m") == 512 * 2**20
    assert spark_size("4gb") == spark_size("4g") == spark_size("4GiB") == 4 * 2**30
    assert spark_size("512ib", "m") is None
    with pytest.raises(Exception, match="too small"):
        parse_memory_mb("512b")
    # spark.executor.memory's bare number is MiB
    row = {"executor_memory_mb": None, "properties_json": json.dumps({"spark.executor.memory": "4096"})}
    assert F.config_features(row)["executor_memory_mb"] == 4096.0


def test_dynamic_allocation_mean_counts_are_two_counts(tmp_path):
    runs, stages = history(dyn=True, execs=(4, 5))
    runs["executors_mean"] = np.where(runs["executors_requested"] == 4, 4.2, 4.8)
    a = suggest_executors("etl", "30GB", store=make_store(tmp_path / "store", (runs, stages)))
    assert a.training_range["executors"] == (4.2, 4.8)
    assert not any(w.startswith("every run of etl used") for w in a.warnings)
    # the default range: twice the most executors held on average (4.8, so 5), at least 8
    assert max(c.executors for c in a.candidates) == 10
