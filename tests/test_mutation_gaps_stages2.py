"""Behaviours of the stage model's loading, self-check, reference runs and per-stage errors that
a second mutation audit of models/stages.py found no test pinning (synthetic runs, no JVM)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from synthetic_runs import MB, make_run, tables, wordcount_stages

from sparkpredict.errors import DegenerateDataError, ModelError
from sparkpredict.models.stages import StageRuntimeModel

GIB = 2**30


def _wc_tables(sizes, E: int = 4, C: int = 4, extra: list | None = None) -> dict:
    runs = [make_run(f"run{i:03d}", "wc", wordcount_stages(S, E, C), E, C, S, t0=10**12 + i * 10**7)
            for i, S in enumerate(sizes)]
    return tables(runs + (extra or []))


@pytest.fixture(scope="module")
def held_out():
    """Word counts of 1, 2 and 4 GiB on 4 x 4 cores fitted, and one of 3 GiB held out."""
    held = make_run("held", "wc", wordcount_stages(3 * GIB, 4, 4), 4, 4, 3 * GIB, t0=2 * 10**12)
    tb = _wc_tables([1 * GIB, 2 * GIB, 4 * GIB], extra=[held])
    model = StageRuntimeModel(tables=tb, n_estimators=10).fit(tb["runs"][tb["runs"].run_id != "held"])
    return tb, model


def test_stage_errors_are_the_relative_errors_of_each_stages_time_and_task_time(held_out):
    """er_task is mean(|predicted - recorded| / recorded) per-task ms, er_stage the same of the
    stage time (waves x per-task ms), on the held-out run's recorded stages."""
    tb, model = held_out
    er = model.stage_errors(tb["runs"][tb["runs"].run_id == "held"]).set_index("signature")
    assert set(er.index) == set(model.signatures_) and (er["n"] == 1).all()
    assert (er["tasks_exact"] == 1).all()
    plan = model.stage_plan("wc", 3 * GIB, 4, 4, 4096.0)
    pred_task = pd.Series(model._task_ms_trees(plan).mean(axis=0), index=plan["signature"].to_numpy())
    stages = tb["stages"][tb["stages"].run_id == "held"].set_index("stage_id")
    for sid, sig in zip(plan["stage_id"], plan["signature"], strict=True):
        tasks = tb["tasks"][(tb["tasks"].run_id == "held") & (tb["tasks"].stage_id == sid)]
        real_task = float(tasks["duration_ms"].mean())
        assert er.loc[sig, "er_task"] == pytest.approx(abs(pred_task[sig] - real_task) / real_task, rel=1e-6)
        real_stage = float(stages.loc[sid, "duration_ms"])
        waves = float(plan.set_index("stage_id").loc[sid, "waves"])
        assert er.loc[sig, "er_stage"] == pytest.approx(abs(pred_task[sig] * waves - real_stage) / real_stage,
                                                        rel=1e-6)
        assert er.loc[sig, "real_stage_ms"] == pytest.approx(real_stage)
    # the table lists the longest stages first
    assert list(er["real_stage_ms"]) == sorted(er["real_stage_ms"], reverse=True)


def test_stage_errors_of_runs_without_stage_rows_are_an_empty_table(held_out):
    """Runs that recorded no stage give no errors, not a failure: the table's columns, no rows."""
    tb, model = held_out
    bare = {**tb, "stages": tb["stages"][tb["stages"].run_id != "held"],
            "tasks": tb["tasks"][tb["tasks"].run_id != "held"]}
    model = StageRuntimeModel(tables=bare, n_estimators=10).fit(tb["runs"][tb["runs"].run_id != "held"])
    er = model.stage_errors(tb["runs"][tb["runs"].run_id == "held"])
    assert er.empty and {"signature", "n", "er_stage", "er_task", "tasks_exact"} <= set(er.columns)


# ---- loading a stage model: from_dict and its self-check --------------------------------------
def _renamed(stages: list[dict], tag: str) -> list[dict]:
    return [{**s, "name": s["name"].replace("wc.py", f"{tag}.py")} for s in stages]


@pytest.fixture(scope="module")
def two_jobs():
    """Jobs "wc" then "other" (other stage names), three sizes each, a forest per signature."""
    runs = []
    for j, job in enumerate(("wc", "other")):
        for i, S in enumerate((1 * GIB, 2 * GIB, 4 * GIB)):
            runs.append(make_run(f"{job}{i}", job, _renamed(wordcount_stages(S, 4, 4), job), 4, 4, S,
                                 t0=10**12 + (3 * j + i) * 10**7))
    tb = tables(runs)
    model = StageRuntimeModel(tables=tb, mode="per_signature", n_estimators=5).fit(tb["runs"])
    return tb, model


def test_the_self_check_asks_every_job_not_only_the_first(two_jobs):
    """A forest of the second job's stages that predicts an overflowing time loads as corrupt:
    the self-check predicts one run of every job the model knows."""
    tb, model = two_jobs
    doc = json.loads(json.dumps(model.to_dict()))
    assert list(StageRuntimeModel.from_dict(doc, tables=tb).runs_["job"].unique()) == ["wc", "other"]
    for sig in doc["forests"]:
        if "other.py" in sig:
            for tree in doc["forests"][sig]["trees"]:
                tree["value"] = [1e308] * len(tree["value"])  # finite, so the arrays pass their checks
    with pytest.raises(ModelError, match="predicts .* for its own training runs"):
        StageRuntimeModel.from_dict(doc, tables=tb)


def test_a_job_whose_first_run_read_nothing_is_checked_at_a_run_with_a_size():
    """A query refuses 0 input bytes: the self-check asks a job's first run that read something,
    and a model whose first recorded run read nothing loads."""
    runs = [make_run(f"run{i}", "wc", wordcount_stages(S, 4, 4), 4, 4, rec, t0=10**12 + i * 10**7)
            for i, (S, rec) in enumerate([(1 * GIB, 0), (2 * GIB, 2 * GIB), (4 * GIB, 4 * GIB)])]
    tb = tables(runs)
    model = StageRuntimeModel(tables=tb, n_estimators=5).fit(tb["runs"])
    back = StageRuntimeModel.from_dict(json.loads(json.dumps(model.to_dict())), tables=tb)
    X = pd.DataFrame({"job": ["wc"], "input_bytes": [3 * GIB], "executors": [4]})
    assert back.predict(X) == pytest.approx(model.predict(X))


@pytest.fixture(scope="module")
def wc_doc():
    tb = _wc_tables([1 * GIB, 2 * GIB, 4 * GIB])
    model = StageRuntimeModel(tables=tb, n_estimators=1).fit(tb["runs"])
    return tb, model, json.loads(json.dumps(model.to_dict()))


def test_a_model_of_one_tree_loads_and_keeps_its_out_of_bag_errors(wc_doc):
    tb, model, doc = wc_doc
    back = StageRuntimeModel.from_dict(doc, tables=tb)
    assert back.n_estimators == 1 and back.cv_mape_ == model.cv_mape_ and np.isfinite(back.cv_mape_)
    assert np.array_equal(back._oob_abs_rel, model._oob_abs_rel) and back.interval_errors() == 3


@pytest.mark.parametrize("trees", [True, 0, -1, 1.0])
def test_a_tree_count_that_is_no_count_is_named_as_corrupt(wc_doc, trees):
    """n_estimators must be a whole count of at least one: True (an int to Python) and 1.0 would
    have loaded a model of one tree, 0 and -1 read as the forest's own tree count."""
    tb, _, doc = wc_doc
    with pytest.raises(ModelError, match=f"corrupt: ValueError: n_estimators is {trees!r}, not a count"):
        StageRuntimeModel.from_dict({**doc, "params": {**doc["params"], "n_estimators": trees}}, tables=tb)


@pytest.mark.parametrize("oob", [[[0.1, 0.2, 0.3]], [0.1, float("nan"), 0.3], [0.1, float("inf"), 0.3], 0.2])
def test_out_of_bag_errors_that_are_not_a_list_of_finite_numbers_are_corrupt(wc_doc, oob):
    tb, _, doc = wc_doc
    with pytest.raises(ModelError, match="oob_abs_rel is not a list of finite errors"):
        StageRuntimeModel.from_dict({**doc, "oob_abs_rel": oob}, tables=tb)


def test_a_model_of_two_runs_loads_without_out_of_bag_errors():
    """Below 3 runs cv_mape is null in the document and the interval unbounded after loading."""
    tb = _wc_tables([1 * GIB, 4 * GIB])
    model = StageRuntimeModel(tables=tb, n_estimators=3).fit(tb["runs"])
    doc = json.loads(json.dumps(model.to_dict()))
    assert doc["cv_mape"] is None
    back = StageRuntimeModel.from_dict(doc, tables=tb)
    assert np.isnan(back.cv_mape_) and back.interval_errors() == 0
    iv = back.predict_interval(pd.DataFrame({"job": ["wc"], "input_bytes": [2 * GIB], "executors": [4]}))
    assert iv["lower_s"][0] == 0 and np.isinf(iv["upper_s"][0])


def test_a_model_loaded_against_tables_without_its_runs_says_how_many_are_held(wc_doc):
    tb, _, doc = wc_doc
    few = {k: v[v.run_id != "run002"] for k, v in tb.items()}
    with pytest.raises(DegenerateDataError, match="holds 2 of the 3 runs"):
        StageRuntimeModel.from_dict(doc, tables=few)
    none = {k: v[v.run_id == "nope"] for k, v in tb.items()}
    with pytest.raises(DegenerateDataError, match="holds 0 of the 3 runs"):
        StageRuntimeModel.from_dict(doc, tables=none)


# ---- reference runs and the configuration stage_errors asks with --------------------------------
def test_a_query_without_job_column_is_answered_when_the_model_knows_one_job(held_out):
    """Only a model of several jobs needs the job named; one job's model answers without it."""
    _, model = held_out
    X = pd.DataFrame({"input_bytes": [3 * GIB], "executors": [4]})
    assert model.predict(X) == pytest.approx(model.predict(X.assign(job="wc")))


def _with_props(run: tuple, **props: str) -> tuple:
    r, s, t = run
    return {**r, "properties_json": json.dumps({**json.loads(r["properties_json"]), **props})}, s, t


def test_stage_errors_ask_with_the_configuration_each_run_was_submitted_with(held_out):
    """A held-out run of 100 shuffle partitions (the training runs: 200) has its task counts
    predicted exactly with use_config, and its reduce stage's not without it; an explicit
    spark.default.parallelism of 8 splits a 256 MiB input in 8, not over the 16 cores."""
    tb, _ = held_out
    fewer = _with_props(make_run("p100", "wc", wordcount_stages(3 * GIB, 4, 4, partitions=100), 4, 4, 3 * GIB,
                                 t0=3 * 10**12), **{"spark.sql.shuffle.partitions": "100"})
    stages = wordcount_stages(256 * MB, 4, 4)
    n8 = int(np.ceil(256 * MB / (32 * MB)))
    stages[0] = {**stages[0], "tasks": [int(100 + 10 * 32)] * n8}
    par8 = _with_props(make_run("dp8", "wc", stages, 4, 4, 256 * MB, t0=4 * 10**12),
                       **{"spark.default.parallelism": "8"})
    extra = tables([fewer, par8])
    tb2 = {k: pd.concat([tb[k], extra[k]], ignore_index=True) for k in ("runs", "stages", "tasks")}
    train = tb2["runs"][tb2["runs"].run_id.str.startswith("run")]
    model = StageRuntimeModel(tables=tb2, n_estimators=10).fit(train)
    sig = {s: next(x for x in model.signatures_ if x.startswith(s)) for s in ("map", "reduce", "collect")}
    for run_id in ("p100", "dp8"):
        er = model.stage_errors(tb2["runs"][tb2["runs"].run_id == run_id]).set_index("signature")
        assert (er["tasks_exact"] == 1).all(), (run_id, er)
    blind = model.stage_errors(tb2["runs"][tb2["runs"].run_id == "p100"], use_config=False).set_index("signature")
    assert blind.loc[sig["reduce"], "tasks_exact"] == 0 and blind.loc[sig["map"], "tasks_exact"] == 1


def test_a_job_of_sub_second_runs_loads():
    """The self-check refuses NaN, infinite and negative runtimes, not short ones."""
    stages = [{"id": 0, "job_id": 0, "name": "map at t.py:1", "parents": [], "tasks": [20] * 4,
               "input_bytes": 4 * MB}]
    tb = tables([make_run(f"t{i}", "tiny", stages, 1, 4, 4 * MB * (i + 1), head_ms=10, gap_ms=1, tail_ms=5,
                          t0=10**12 + i * 10**7) for i in range(3)])
    model = StageRuntimeModel(tables=tb, n_estimators=3).fit(tb["runs"])
    X = pd.DataFrame({"job": ["tiny"], "input_bytes": [8 * MB], "executors": [1]})
    assert 0 < model.predict(X)[0] < 1
    assert StageRuntimeModel.from_dict(json.loads(json.dumps(model.to_dict())), tables=tb).predict(X) == \
        pytest.approx(model.predict(X))


@pytest.mark.parametrize(("table", "column"), [("runs", "job"), ("runs", "run_id"), ("stages", "run_id"),
                                               ("tasks", "run_id")])
def test_tables_given_without_a_key_column_are_one_clear_error_naming_it(table, column):
    """Tables built by hand without the runs' job (or a run_id) stopped the fit with a raw
    KeyError from the driver-trend code; the error names the table, the column and the fix."""
    from sparkpredict.errors import InputError

    tb = _wc_tables([1 * GIB, 2 * GIB, 4 * GIB])
    runs = tb["runs"]
    given = {**tb, table: tb[table].drop(columns=[column])}
    with pytest.raises(InputError, match=f"the {table} table given has no {column} column") as e:
        StageRuntimeModel(tables=given, n_estimators=5).fit(runs)
    assert "store's columns" in e.value.fix
