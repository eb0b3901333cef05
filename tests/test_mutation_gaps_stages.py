"""Behaviours of the stage-level models that a mutation audit of models/stages.py, stage_plan.py,
stage_data.py and simulate.py found no test pinning (synthetic runs of known schedules, no JVM)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from synthetic_runs import (
    MB,
    make_run,
    spark_splits,
    tables,
    wordcount_history,
    wordcount_stages,
    wordcount_truth_s,
)

from sparkpredict.models.stages import StageRuntimeModel

GIB = 2**30


@pytest.fixture(scope="module")
def wc3():
    """Word counts of 1, 2 and 4 GiB on 4 executors of 4 cores, and a stage model of them."""
    tb = wordcount_history([1 * GIB, 2 * GIB, 4 * GIB], [4])
    return tb, StageRuntimeModel(tables=tb, n_estimators=10).fit(tb["runs"])


def test_a_planned_stage_reads_and_writes_its_bytes_over_its_tasks(wc3):
    """Bytes in, bytes out and records per task are the stage's totals, scaled to the query's
    size, over its predicted task count."""
    tb, model = wc3
    plan = model.stage_plan("wc", 8 * GIB, 4).set_index("stage_id")
    ref = tb["stages"][tb["stages"].run_id == plan.attrs["reference_run"]].set_index("stage_id")
    ratio = 8 * GIB / float(tb["runs"].set_index("run_id").loc[plan.attrs["reference_run"], "input_bytes"])
    for sid in (0, 1):
        row = plan.loc[sid]
        assert row["bytes_out"] == pytest.approx(ref.loc[sid, "shuffle_write_bytes"] * ratio)
        assert row["bytes_in_per_task"] == pytest.approx(row["bytes_in"] / row["num_tasks"])
        assert row["bytes_out_per_task"] == pytest.approx(row["bytes_out"] / row["num_tasks"])
        assert row["records_in_per_task"] == pytest.approx(row["records_in"] / row["num_tasks"])
    assert plan.loc[0, "bytes_in"] == pytest.approx(8 * GIB)


def test_an_input_stage_is_split_for_the_cores_of_the_querys_cluster(wc3):
    """spark.default.parallelism, unset, is the new cluster's cores: 4 GiB over 16 x 4 cores
    are 64 splits, not the 16 of the recording's 4 x 4; a query that sets it gets its own."""
    _, model = wc3
    for execs in (1, 4, 16):
        plan = model.stage_plan("wc", 4 * GIB, execs).set_index("stage_id")
        assert plan.loc[0, "num_tasks"] == spark_splits(4 * GIB, execs * 4)
        assert plan.loc[0, "default_parallelism"] == execs * 4
        assert plan.loc[0, "task_slots"] == execs * 4
        assert plan.loc[0, "waves"] == np.ceil(plan.loc[0, "num_tasks"] / (execs * 4))
        assert plan.loc[1, "waves"] == np.ceil(200 / (execs * 4))  # shuffle partitions stay 200
    given = model.stage_plan("wc", 4 * GIB, 16, config={"default_parallelism": 8}).set_index("stage_id")
    assert given.loc[0, "num_tasks"] == spark_splits(4 * GIB, 8) and given.loc[0, "default_parallelism"] == 8
    fewer = model.stage_plan("wc", 4 * GIB, 16, config={"shuffle_partitions": 50}).set_index("stage_id")
    assert fewer.loc[1, "num_tasks"] == 50 and fewer.loc[1, "waves"] == 1


def test_a_query_without_input_bytes_is_asked_at_its_reference_runs_size(wc3):
    """No input_bytes column: the plan is the reference run's own, at its bytes."""
    tb, model = wc3
    bare = pd.DataFrame({"job": ["wc"], "executors": [4]})
    plan = model.stage_plan("wc", float("nan"), 4)
    size = float(tb["runs"].set_index("run_id").loc[plan.attrs["reference_run"], "input_bytes"])
    same = model.stage_plan("wc", size, 4, _ref=plan.attrs["reference_run"])
    assert plan["bytes_in"].tolist() == pytest.approx(same["bytes_in"].tolist())
    assert plan["num_tasks"].tolist() == same["num_tasks"].tolist()
    assert model.predict(bare)[0] == pytest.approx(
        model.predict(bare.assign(input_bytes=size))[0], rel=1e-9)


def test_a_job_of_one_stage_is_planned_and_predicted():
    """A job of a single stage (a map-only write) has a plan of one row, in both combines."""
    def save(size: float) -> list[dict]:  # map tasks of 100 ms + 10 ms per MiB over 8 cores' splits
        n = spark_splits(size, 8)
        return [{"id": 0, "job_id": 0, "name": "save at etl.py:3", "parents": [],
                 "tasks": [int(100 + 10 * size / n / MB)] * n, "input_bytes": size}]

    tb = tables([make_run(f"r{i}", "etl", save(s), 2, 4, s, t0=10**12 + i * 10**7)
                 for i, s in enumerate((GIB, 2 * GIB, 4 * GIB))])
    q = pd.DataFrame({"job": ["etl"], "input_bytes": [float(8 * GIB)], "executors": [2]})
    truth = make_run("t", "etl", save(8 * GIB), 2, 4, 8 * GIB)[0]
    for combine in ("waves", "simulate"):
        model = StageRuntimeModel(tables=tb, n_estimators=10, combine=combine).fit(tb["runs"])
        assert len(model.stage_plan("etl", 8 * GIB, 2)) == 1
        assert model.predict(q)[0] == pytest.approx(truth["wall_ms"] / 1000, rel=0.15), combine


def test_runs_that_read_no_input_are_not_scaled_by_the_querys_size():
    """A job whose runs read nothing (data generated in memory) has no size to scale from: its
    stages keep their recorded bytes and tasks at any queried size, and the prediction is finite."""
    gen = [{"id": 0, "job_id": 0, "name": "range at gen.py:2", "parents": [], "tasks": [300] * 8,
            "shuffle_write_bytes": 64 * MB},
           {"id": 1, "job_id": 0, "name": "count at gen.py:3", "parents": [0], "tasks": [200] * 8,
            "shuffle_read_bytes": 64 * MB}]
    tb = tables([make_run(f"g{i}", "gen", gen, e, 2, 0, t0=10**12 + i * 10**7) for i, e in enumerate((1, 2, 4))])
    model = StageRuntimeModel(tables=tb, n_estimators=10).fit(tb["runs"])
    plan = model.stage_plan("gen", 50 * GIB, 2)
    assert plan["bytes_out"].tolist() == pytest.approx([64 * MB, 0.0])
    pred = model.predict(pd.DataFrame({"job": "gen", "input_bytes": [1.0, 50.0 * GIB], "executors": 2}))
    assert np.isfinite(pred).all() and pred[0] == pytest.approx(pred[1])


def test_runs_recorded_without_task_rows_replay_their_planned_tasks_at_the_predicted_time(wc3):
    """Without task rows (spark.sparkpredict.tasks=false) a stage has no recorded skew: the
    simulate combine gives each planned task the predicted per-task time, and on these
    sequential stages agrees with waves x per-task time."""
    tb, _ = wc3
    bare = dict(tb, tasks=None)
    q = pd.DataFrame({"job": "wc", "input_bytes": float(8 * GIB), "executors": [4, 16]})
    waves = StageRuntimeModel(tables=bare, n_estimators=10).fit(tb["runs"]).predict(q)
    replayed = StageRuntimeModel(tables=bare, n_estimators=10, combine="simulate").fit(tb["runs"]).predict(q)
    assert replayed == pytest.approx(waves, rel=0.05)


def test_an_explicit_default_parallelism_is_kept_on_another_cluster():
    """Runs that set spark.default.parallelism keep it on any cluster: their input splits do
    not follow the new cores."""
    import json

    runs = []
    for i, s in enumerate((1 * GIB, 2 * GIB, 4 * GIB)):
        r, st, tk = make_run(f"p{i}", "wc", wordcount_stages(s, 2, 4), 4, 4, s, t0=10**12 + i * 10**7)
        r["properties_json"] = json.dumps(dict(json.loads(r["properties_json"]), **{"spark.default.parallelism": "8"}))
        runs.append((r, st, tk))
    model = StageRuntimeModel(tables=tables(runs), n_estimators=10).fit(tables(runs)["runs"])
    for execs in (1, 16):
        plan = model.stage_plan("wc", 4 * GIB, execs).set_index("stage_id")
        assert plan.loc[0, "default_parallelism"] == 8
        assert plan.loc[0, "num_tasks"] == spark_splits(4 * GIB, 8)


def test_given_tables_carry_each_scan_stages_files():
    """A stage_scans table given beside the stages sets each attempt's scan_files (the latest
    row of an attempt written twice), NaN where a stage has none; the rows keep their order."""
    from sparkpredict.models.stage_data import load_tables

    tb = wordcount_history([1 * GIB, 2 * GIB], [4])
    scans = pd.DataFrame({"run_id": ["run000", "run001", "run001", "other"], "stage_id": [0, 0, 0, 0],
                          "stage_attempt_id": [0, 0, 0, 0], "scan_files": [3, 5, 6, 9]})
    runs, stages, tasks = load_tables(None, dict(tb, stage_scans=scans), ["run000", "run001"])
    assert len(runs) == 2 and len(tasks) == len(tb["tasks"])
    assert list(stages.index) == list(tb["stages"].index)
    files = stages.set_index(["run_id", "stage_id"])["scan_files"]
    assert files[("run000", 0)] == 3 and files[("run001", 0)] == 6
    assert files.drop([("run000", 0), ("run001", 0)]).isna().all()
    # no stage_scans: every stage's files unknown
    assert load_tables(None, tb, ["run000"])[1]["scan_files"].isna().all()


def test_the_simulate_combine_keeps_each_stages_recorded_straggler():
    """combine="simulate" gives each planned task the stage's recorded shape: a stage of 15
    tasks of 100 ms and one of 2 s (launched first) on 16 slots lasts about 2 s, where waves x
    mean reads 0.22 s."""
    job = [{"id": 0, "job_id": 0, "name": "scan at s.py:1", "parents": [], "tasks": [2000] + [100] * 15,
            "input_bytes": 16 * MB, "shuffle_write_bytes": MB},
           {"id": 1, "job_id": 0, "name": "count at s.py:2", "parents": [0], "tasks": [100] * 4,
            "shuffle_read_bytes": MB}]
    runs = [make_run(f"s{i}", "skew", job, 4, 4, 16 * MB, t0=10**12 + i * 10**7) for i in range(3)]
    tb = tables(runs)
    q = pd.DataFrame({"job": ["skew"], "input_bytes": [float(16 * MB)], "executors": [4]})
    wall = tb["runs"]["wall_ms"].iloc[0] / 1000
    replayed = StageRuntimeModel(tables=tb, n_estimators=10, combine="simulate").fit(tb["runs"]).predict(q)[0]
    waves = StageRuntimeModel(tables=tb, n_estimators=10).fit(tb["runs"]).predict(q)[0]
    assert replayed == pytest.approx(wall, rel=0.03)
    assert waves < wall - 1.5


def _one_stage_timeline(n_tasks: int, task_ms: int, executors: int, cores: int, task_cpus: int = 1,
                        head_ms: int = 0, tail_ms: int = 0):
    """A replay timeline of one stage of ``n_tasks`` tasks run in waves on its slots."""
    import json
    from dataclasses import replace

    from sparkpredict.models.simulate import Timeline

    slots = executors * (cores // task_cpus)
    end = -(-n_tasks // slots) * task_ms
    runs = pd.DataFrame([{"run_id": "r", "job": "j", "start_ms": -head_ms, "end_ms": end + tail_ms,
                          "executors_max": executors,
                          "executor_cores": cores, "task_slots": slots}])
    st = pd.DataFrame([{"run_id": "r", "stage_id": 0, "stage_attempt_id": 0, "job_id": 0, "name": "s0",
                        "parent_stage_ids_json": json.dumps([]), "submission_ms": 0, "completion_ms": end}])
    tk = pd.DataFrame([{"run_id": "r", "stage_id": 0, "stage_attempt_id": 0, "executor_id": "1",
                        "launch_ms": (i // slots) * task_ms, "finish_ms": (i // slots + 1) * task_ms,
                        "duration_ms": task_ms} for i in range(n_tasks)])
    tl = Timeline.from_tables(runs, st, tk)
    return tl if task_cpus == 1 else replace(tl, task_cpus=task_cpus)


def test_host_cores_undo_only_the_oversubscription_the_recording_had():
    """--host-cores divides recorded durations by the recording's cores' worth of tasks over
    the host's cores, never by less than 1: a recording on 2 of 4 host cores ran alone and
    keeps its durations; one of tasks of 2 cpus on 2 slots (4 cores' worth) on 2 host cores
    ran them twice as slowly, and replays 1 such task at a time at half their duration."""
    from sparkpredict.models.simulate import replay

    alone = _one_stage_timeline(8, 100, 1, 2)
    assert replay(alone, 1, 2, host_cores=4).predicted_runtime_s == pytest.approx(0.4)
    assert replay(alone, 2, 2, host_cores=4).predicted_runtime_s == pytest.approx(0.2)  # 4 cores: 4 at once
    wide = _one_stage_timeline(8, 200, 1, 4, task_cpus=2)
    assert wide.task_cpus == 2
    res = replay(wide, 1, 4, host_cores=2)
    assert res.running_slots == 1 and res.predicted_runtime_s == pytest.approx(0.8)


def test_a_fit_does_not_depend_on_the_order_the_rows_were_read_in(wc3):
    """A store, Spark and an event log hand the rows over in different orders; the forests'
    bootstrap picks rows by position, so a fit sorts them first and predicts the same."""
    tb, model = wc3
    shuffled = {k: v.sample(frac=1.0, random_state=3).reset_index(drop=True) for k, v in tb.items()}
    other = StageRuntimeModel(tables=shuffled, n_estimators=10).fit(tb["runs"])
    q = pd.DataFrame({"job": "wc", "input_bytes": [3.0 * GIB, 40.0 * GIB], "executors": [2, 16]})
    assert other.predict(q).tolist() == model.predict(q).tolist()


def test_a_plan_mixing_signature_forests_and_the_shared_forest_predicts_every_stage():
    """mode="auto" with some stages on their own forests and the others on the shared one:
    every stage gets a time (the map and collect here have 4 rows each, the reduce, renamed in
    one run, 3), and the job is predicted as its truth."""
    runs = []
    for i, s in enumerate((1 * GIB, 2 * GIB, 3 * GIB, 4 * GIB)):
        st = wordcount_stages(s, 4, 4)
        if s == 4 * GIB:
            st[1]["name"] = "reduce at wc.py:13"
        runs.append(make_run(f"m{i}", "wc", st, 4, 4, s, t0=10**12 + i * 10**7))
    tb = tables(runs)
    model = StageRuntimeModel(tables=tb, n_estimators=10, min_rows_per_signature=4).fit(tb["runs"])
    assert len(model.forests_) == 2
    plan = model.stage_plan("wc", 3 * GIB, 4)
    assert plan.attrs["reference_run"] == "m2" and plan["signature"].isin(model.forests_).sum() == 2
    pred = model.predict(pd.DataFrame({"job": ["wc"], "input_bytes": [float(3 * GIB)], "executors": [4]}))[0]
    assert pred == pytest.approx(wordcount_truth_s(3 * GIB, 4, 4), rel=0.05)


def test_a_task_beyond_the_bytes_its_stage_ever_read_grows_at_ms_per_mib_plus_one():
    """The shared forest is asked at the most a signature's tasks read, and the time grows from
    there by (MiB per task + 1) over (the most + 1): the reduce of one 1 GiB word count reads
    0.5 MiB a task, 5.1 MiB at 10 GiB (its 200 partitions kept), 4.05x the time a task."""
    tb = wordcount_history([1 * GIB], [4])
    model = StageRuntimeModel(tables=tb, n_estimators=10).fit(tb["runs"])
    one, ten = (model.stage_plan("wc", s, 4) for s in (1 * GIB, 10 * GIB))
    r1, r10 = (p.index[p["stage_id"] == 1][0] for p in (one, ten))
    assert ten.loc[r10, "num_tasks"] == one.loc[r1, "num_tasks"] == 200
    bpt1, bpt10 = one.loc[r1, "bytes_in_per_task"] / MB, ten.loc[r10, "bytes_in_per_task"] / MB
    ms1 = model._task_ms_trees(one).mean(axis=0)[list(one.index).index(r1)]
    ms10 = model._task_ms_trees(ten).mean(axis=0)[list(ten.index).index(r10)]
    assert ms10 / ms1 == pytest.approx((bpt10 + 1) / (bpt1 + 1), rel=1e-9)


def test_the_head_follows_its_trend_in_the_executor_count_between_the_recorded_counts():
    """The time from application start to the first stage moves with the executor count along
    the line fitted over the runs (here +1 s an executor): 3 executors asked of a run on 2 or 4
    add or take 1 s, in the point and in the trees alike."""
    runs = [make_run(f"h{i}", "wc", wordcount_stages(s, e, 4), e, 4, s, head_ms=1000 + 1000 * e,
                     t0=10**12 + i * 10**7)
            for i, (s, e) in enumerate((s, e) for s in (1 * GIB, 2 * GIB) for e in (1, 2, 4))]
    tb = tables(runs)
    q = pd.DataFrame({"job": ["wc"], "input_bytes": [float(2 * GIB)], "executors": [3]})
    trend = StageRuntimeModel(tables=tb, n_estimators=10).fit(tb["runs"])
    flat = StageRuntimeModel(tables=tb, n_estimators=10, driver_trend=False).fit(tb["runs"])
    ref = trend.stage_plan("wc", 2 * GIB, 3).attrs["reference_run"]
    ref_execs = tb["runs"].set_index("run_id").loc[ref, "executors_max"]
    assert trend.head_slope_ms_["wc"] == pytest.approx(1000)
    assert trend.training_range_ == {"input_bytes": (GIB, 2 * GIB), "executors": (1.0, 4.0)}
    assert trend.predict(q)[0] - flat.predict(q)[0] == pytest.approx(3 - ref_execs, abs=1e-6)
    a, b = trend.predict_interval(q, 0.5), flat.predict_interval(q, 0.5)
    assert a["predicted_runtime_s"][0] - b["predicted_runtime_s"][0] == pytest.approx(3 - ref_execs, abs=1e-6)
    assert a["lower_s"][0] > 0.5 * a["predicted_runtime_s"][0]  # the trees moved by the shift, not cut to 5 %


def test_the_interval_spans_the_trees_central_share_and_the_out_of_bag_errors(wc3):
    """lower_s and upper_s hold the trees' (1 - confidence) / 2 and (1 + confidence) / 2
    quantiles and point x (1 -/+ the out-of-bag error quantile), beyond the sizes widened."""
    _, model = wc3
    assert model.interval_errors() == 3  # 3 runs are enough for out-of-bag errors
    q = pd.DataFrame({"job": "wc", "input_bytes": [1.5 * GIB, 3.0 * GIB], "executors": [1, 8]})
    point, trees = model._evaluate(q, trees=True)
    for conf in (0.5, 0.9):
        iv = model.predict_interval(q, conf)
        err = np.quantile(model._oob_abs_rel, conf)
        assert np.all(iv["lower_s"] <= np.quantile(trees, (1 - conf) / 2, axis=1) + 1e-9)
        assert np.all(iv["upper_s"] >= np.quantile(trees, (1 + conf) / 2, axis=1) - 1e-9)
        assert iv["lower_s"] == pytest.approx(np.minimum(np.quantile(trees, (1 - conf) / 2, axis=1),
                                                         point * (1 - err)))
        assert iv["upper_s"] == pytest.approx(np.maximum(np.quantile(trees, (1 + conf) / 2, axis=1),
                                                         point * (1 + err)))
    # far beyond the sizes the widening passes 100 %: the lower end stays at 5 % of the point
    far = model.predict_interval(q.assign(input_bytes=4e6 * GIB), 0.9)
    assert np.all(far["lower_s"] >= 0) and np.all(far["upper_s"] > 2 * far["predicted_runtime_s"])


def test_a_replays_lower_bound_and_busy_share_are_its_own_not_its_wall_time():
    """3 tasks of 100 ms on 2 slots: replayed in 200 ms, while no schedule beats 150 ms (the work
    over the slots), and the slots were busy 300 of 400 slot-ms."""
    from sparkpredict.models.simulate import replay

    res = replay(_one_stage_timeline(3, 100, 1, 2), 1, 2)
    assert res.predicted_runtime_s == pytest.approx(0.2)
    assert res.lower_bound_s == pytest.approx(0.15)
    assert res.busy_fraction == pytest.approx(0.75)
    # driver time before the first stage and after the last counts in the bound too
    res = replay(_one_stage_timeline(3, 100, 1, 2, head_ms=1000, tail_ms=500), 1, 2)
    assert res.predicted_runtime_s == pytest.approx(1.7) and res.lower_bound_s == pytest.approx(1.65)


def test_a_stage_waits_for_every_stage_done_before_its_submission_not_only_its_parents():
    """Stages 0 (200 ms) and 1 (100 ms) ran side by side and stage 2, child of 0, was submitted
    when both were done. Asked with stage 1 at 300 ms, stage 2 starts after it: no schedule
    beats 350 ms, where counting its parent alone, or the stage that finished first in the
    recording as already done, said 250 ms."""
    import json

    from sparkpredict.models.simulate import Timeline, lower_bound_ms

    runs = pd.DataFrame([{"run_id": "r", "job": "j", "start_ms": 0, "end_ms": 250, "executors_max": 1,
                          "executor_cores": 4, "task_slots": 4}])
    spans = {0: (0, 200, []), 1: (0, 100, []), 2: (200, 250, [0])}
    st = pd.DataFrame([{"run_id": "r", "stage_id": s, "stage_attempt_id": 0, "job_id": 0, "name": f"s{s}",
                        "parent_stage_ids_json": json.dumps(p), "submission_ms": a, "completion_ms": b}
                       for s, (a, b, p) in spans.items()])
    tk = pd.DataFrame([{"run_id": "r", "stage_id": s, "stage_attempt_id": 0, "executor_id": "1", "launch_ms": a,
                        "finish_ms": b, "duration_ms": b - a} for s, (a, b, _) in spans.items()])
    tl = Timeline.from_tables(runs, st, tk)
    assert lower_bound_ms(tl, 100) == pytest.approx(250)
    longer = tl.with_durations(np.array([{0: 200.0, 1: 300.0, 2: 50.0}[int(s)] for s in tl.stage_ids]))
    assert lower_bound_ms(longer, 100) == pytest.approx(350)


def test_a_stage_without_tasks_adds_nothing_to_the_lower_bound():
    """A stage with no task rows between two others takes no time in the critical path: 100 ms
    then 50 ms bound the run at 150 ms (the next stage's task had counted for it too: 200 ms)."""
    import json

    from sparkpredict.models.simulate import Timeline, lower_bound_ms

    runs = pd.DataFrame([{"run_id": "r", "job": "j", "start_ms": 0, "end_ms": 150, "executors_max": 1,
                          "executor_cores": 4, "task_slots": 4}])
    spans = {0: (0, 100, []), 1: (100, 100, [0]), 2: (100, 150, [1])}
    st = pd.DataFrame([{"run_id": "r", "stage_id": s, "stage_attempt_id": 0, "job_id": 0, "name": f"s{s}",
                        "parent_stage_ids_json": json.dumps(p), "submission_ms": a, "completion_ms": b}
                       for s, (a, b, p) in spans.items()])
    tk = pd.DataFrame([{"run_id": "r", "stage_id": s, "stage_attempt_id": 0, "executor_id": "1", "launch_ms": a,
                        "finish_ms": b, "duration_ms": b - a} for s, (a, b, _) in spans.items() if s != 1])
    tl = Timeline.from_tables(runs, st, tk)
    assert tl.n_stages == 3 and lower_bound_ms(tl, 100) == pytest.approx(150)
