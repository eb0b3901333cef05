"""Behaviours of the stage-level replay (models/simulate.py, timeline.py, replay.py) and of the
stage model's errors and reference runs that a mutation audit found no test pinning
(synthetic runs and hand-built timelines, no JVM)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from synthetic_runs import make_run, tables, wordcount_stages

from sparkpredict.models.simulate import Timeline, replay
from sparkpredict.models.stages import StageRuntimeModel

GIB = 2**30


def _wc(run_id: str, size: float, E: int = 4, C: int = 4, t0: int = 10**12):
    return make_run(run_id, "wc", wordcount_stages(size, E, C), E, C, size, t0=t0)


@pytest.fixture(scope="module")
def held_out():
    """Word counts of 1, 2 and 4 GiB on 4 x 4 cores fitted; one of 3 GiB held out."""
    runs = [_wc(f"run{i:03d}", S, t0=10**12 + i * 10**7) for i, S in enumerate([GIB, 2 * GIB, 4 * GIB])]
    tb = tables(runs + [_wc("held", 3 * GIB, t0=2 * 10**12)])
    model = StageRuntimeModel(tables=tb, n_estimators=10).fit(tb["runs"][tb["runs"].run_id != "held"])
    return tb, model


# ---- stage_errors: recorded times of zero, a run listed twice ----------------------------------
def _zeroed(tb: dict, stage_id: int, *, tasks: bool, stage: bool, ms: int = 0) -> dict:
    """The held-out run with one stage's task durations and/or stage duration recorded as ``ms``."""
    st, tk = tb["stages"].copy(), tb["tasks"].copy()
    at_st = (st.run_id == "held") & (st.stage_id == stage_id)
    at_tk = (tk.run_id == "held") & (tk.stage_id == stage_id)
    if tasks:
        tk.loc[at_tk, "finish_ms"] = tk.loc[at_tk, "launch_ms"] + ms
        tk.loc[at_tk, ["duration_ms", "executor_run_time_ms"]] = ms
        st.loc[at_st, "executor_run_time_ms"] = ms * int(at_tk.sum())
    if stage:
        st.loc[at_st, "completion_ms"] = st.loc[at_st, "submission_ms"] + ms
        st.loc[at_st, "duration_ms"] = ms
    return {**tb, "stages": st, "tasks": tk}


def _errors(tb: dict, model: StageRuntimeModel, runs: pd.DataFrame) -> pd.DataFrame:
    return _refit(tb, model).stage_errors(runs).set_index("signature")


def _refit(tb: dict, model: StageRuntimeModel) -> StageRuntimeModel:
    return StageRuntimeModel(tables=tb, n_estimators=10).fit(tb["runs"][tb["runs"].run_id != "held"])


def test_a_stage_of_sub_millisecond_tasks_keeps_its_stage_time_error(held_out):
    """A relative error of a recorded 0 ms is undefined, so that error is left out, and only it:
    a collect whose one task took under a millisecond (0 ms recorded) but whose stage took 200 ms
    still has the error of its stage time, and n counts it; its task error is NaN, not inf.
    Before, the row was dropped whole and the collect had no stage error at all."""
    tb, model = held_out
    sig = next(s for s in model.signatures_ if s.startswith("collect"))
    er = _errors(_zeroed(tb, 2, tasks=True, stage=False), model, tb["runs"][tb["runs"].run_id == "held"])
    base = _errors(tb, model, tb["runs"][tb["runs"].run_id == "held"])
    assert sig in er.index and er.loc[sig, "n"] == 1
    assert er.loc[sig, "er_stage"] == pytest.approx(base.loc[sig, "er_stage"], rel=1e-9)
    assert np.isnan(er.loc[sig, "er_task"])
    assert np.isfinite(er.drop(index=sig)[["er_stage", "er_task"]].to_numpy()).all()


def test_a_stage_recorded_at_zero_ms_keeps_its_task_time_error_and_no_infinity(held_out):
    """A stage whose submission and completion fell in one ms (0 ms) keeps its per-task error;
    its stage error is NaN, not inf (|pred - 0| / 0), and the other stages' errors are unchanged."""
    tb, model = held_out
    sig = next(s for s in model.signatures_ if s.startswith("collect"))
    er = _errors(_zeroed(tb, 2, tasks=False, stage=True), model, tb["runs"][tb["runs"].run_id == "held"])
    base = _errors(tb, model, tb["runs"][tb["runs"].run_id == "held"])
    assert np.isnan(er.loc[sig, "er_stage"]) and er.loc[sig, "er_task"] == pytest.approx(base.loc[sig, "er_task"])
    assert er.drop(index=sig)["er_stage"].to_numpy() == pytest.approx(base.drop(index=sig)["er_stage"].to_numpy())


def test_a_stage_with_both_times_zero_is_left_out(held_out):
    """With neither time above 0 there is no error to give: the signature has no row."""
    tb, model = held_out
    sig = next(s for s in model.signatures_ if s.startswith("collect"))
    er = _errors(_zeroed(tb, 2, tasks=True, stage=True), model, tb["runs"][tb["runs"].run_id == "held"])
    assert sig not in er.index and len(er) == len(model.signatures_) - 1


@pytest.mark.parametrize("stage_ms, task_ms", [(1, 1), (1, 0), (0, 1)])
def test_a_time_of_one_millisecond_has_its_error(held_out, stage_ms, task_ms):
    """1 ms is a time: each time recorded at 1 ms gives a finite error (one at 0 ms, NaN)."""
    tb, model = held_out
    sig = next(s for s in model.signatures_ if s.startswith("collect"))
    tb2 = _zeroed(_zeroed(tb, 2, tasks=True, stage=False, ms=task_ms), 2, tasks=False, stage=True, ms=stage_ms)
    er = _errors(tb2, model, tb["runs"][tb["runs"].run_id == "held"])
    assert er.loc[sig, "n"] == 1
    assert np.isfinite(er.loc[sig, "er_stage"]) == (stage_ms == 1)
    assert np.isfinite(er.loc[sig, "er_task"]) == (task_ms == 1)
    if task_ms:
        assert er.loc[sig, "er_task"] > 1  # over 100 ms predicted for a task of 1 ms


def test_a_held_out_run_listed_twice_counts_once(held_out):
    """stage_errors groups by run: the same run id given twice is one run's errors (n 1), as
    given once, not two."""
    tb, model = held_out
    held = tb["runs"][tb["runs"].run_id == "held"]
    once = model.stage_errors(held).set_index("signature")
    twice = model.stage_errors(pd.concat([held, held])).set_index("signature")
    pd.testing.assert_frame_equal(once, twice)
    assert (twice["n"] == 1).all()


def test_a_run_stored_twice_is_read_from_its_last_row(held_out):
    """A store holding two rows of one run (a later row replaces an earlier one) asks the plan
    at the last row's size, as the stage table reads the run: an earlier row saying 1 GiB does
    not turn the 3 GiB held-out run's errors into those of a 1 GiB plan."""
    tb, model = held_out
    held = tb["runs"][tb["runs"].run_id == "held"]
    stale = held.assign(input_bytes=GIB)
    tb2 = {**tb, "runs": pd.concat([stale, tb["runs"]], ignore_index=True)}
    m2 = _refit(tb2, model)
    er = m2.stage_errors(held).set_index("signature")
    base = _refit(tb, model).stage_errors(held).set_index("signature")
    pd.testing.assert_frame_equal(er, base)
    assert (er["tasks_exact"] == 1).all()


# ---- the stage model's reference run: a run of unknown executor count --------------------------
def test_a_run_of_unknown_executor_count_is_read_as_one_executor_for_the_reference():
    """The stage table reads a run without any executor count (no requested, held or mean count,
    no spark.executor.instances) as 1 executor, and its forest learnt the run so; the reference
    run is chosen in the same reading: at 4 executors the known 4-executor run of that size; at 1
    executor the unknown run ties with the known 1-executor one and, the faster of the two, is
    the lower middle of their wall times (read as 0 executors, or unknown and so last, as the
    replay model reads it, the 1-executor run would stand for it)."""
    known = _wc("known", 2 * GIB, t0=10**12)
    one = _wc("one", 2 * GIB, E=1, t0=10**12 + 5 * 10**7)
    r, s, t = _wc("unknown", 2 * GIB, t0=10**12 + 10**7)
    props = {k: v for k, v in json.loads(r["properties_json"]).items() if k != "spark.executor.instances"}
    r = {**r, "executors_requested": None, "executors_max": None, "executors_mean": None,
         "properties_json": json.dumps(props)}
    others = [_wc(f"run{i}", S, t0=10**12 + (2 + i) * 10**7) for i, S in enumerate([GIB, 4 * GIB])]
    tb = tables([known, one, (r, s, t), *others])
    assert r["wall_ms"] < one[0]["wall_ms"]
    model = StageRuntimeModel(tables=tb, n_estimators=10).fit(tb["runs"])
    assert model.stage_table_.groupby("run_id")["executors"].first()["unknown"] == 1
    assert model.stage_plan("wc", 2 * GIB, 1).attrs["reference_run"] == "unknown"
    assert model.stage_plan("wc", 2 * GIB, 4).attrs["reference_run"] == "known"


# ---- timeline: which attempt of a retried parent a stage waits for ------------------------------
def _retry_tables():
    """Stage 0 ran (0-100 ms); its child, stage 1, ran from 110 and lost its parent's output
    (fetch failure, its attempt ended at 200); stage 0 ran again as attempt 1 (210-510 ms, one
    300 ms task recomputing the lost partition) and stage 1 as attempt 1 (520-600 ms)."""
    runs = pd.DataFrame([{"run_id": "r", "job": "j", "start_ms": 0, "end_ms": 600, "executors_max": 1,
                          "executor_cores": 2, "task_slots": 2}])
    st = pd.DataFrame([
        {"stage_id": 0, "stage_attempt_id": 0, "submission_ms": 0, "completion_ms": 100, "parents": []},
        {"stage_id": 1, "stage_attempt_id": 0, "submission_ms": 110, "completion_ms": 200, "parents": [0]},
        {"stage_id": 0, "stage_attempt_id": 1, "submission_ms": 210, "completion_ms": 510, "parents": []},
        {"stage_id": 1, "stage_attempt_id": 1, "submission_ms": 520, "completion_ms": 600, "parents": [0]}])
    st = st.assign(run_id="r", job_id=0, name=lambda d: "s" + d.stage_id.astype(str),
                   parent_stage_ids_json=st.parents.map(json.dumps)).drop(columns="parents")
    tk = pd.DataFrame([(0, 0, 0, 100)] * 2 + [(1, 0, 110, 200)] * 2 + [(0, 1, 210, 510), (1, 1, 520, 600)],
                      columns=["stage_id", "stage_attempt_id", "launch_ms", "finish_ms"])
    tk = tk.assign(run_id="r", executor_id="1", duration_ms=tk.finish_ms - tk.launch_ms)
    return runs, st, tk


def test_a_stage_waits_for_the_attempt_of_its_parent_that_finished_before_it_was_submitted():
    """The child's first attempt waits for the parent's first (the retry came after it); the
    child's retry waits for the parent's retry, the attempt whose output it read, and for its
    own first attempt. So the replay keeps the chain: on any number of slots the retry's 300 ms
    task still stands between the two attempts of the child."""
    tl = Timeline.from_tables(*_retry_tables())
    pos = {(int(s), int(a)): i for i, (s, a) in enumerate(zip(tl.stage_ids, tl.stage_attempts, strict=True))}
    parents = {k: sorted((int(tl.stage_ids[j]), int(tl.stage_attempts[j])) for j in tl.parents[i])
               for k, i in pos.items()}
    assert parents == {(0, 0): [], (1, 0): [(0, 0)], (0, 1): [(0, 0)], (1, 1): [(0, 1), (1, 0)]}
    assert replay(tl, 1, 2).predicted_runtime_s == pytest.approx(0.6)
    assert replay(tl, 8, 2).predicted_runtime_s == pytest.approx(0.6)


# ---- the replay: recorded slots, host cores, tasks without times ------------------------------
def _one_run(stages: list[dict], tasks: list[dict], **run):
    runs = pd.DataFrame([{"run_id": "r", "job": "j", "start_ms": 0, "executors_max": 1, "executor_cores": 4,
                          "task_slots": 4, **run}])
    st = pd.DataFrame([{"run_id": "r", "stage_attempt_id": 0, "job_id": 0, "name": f"s{s['stage_id']}",
                        "parent_stage_ids_json": "[]", **s} for s in stages])
    tk = pd.DataFrame([{"run_id": "r", "stage_attempt_id": 0, "executor_id": "1", **t} for t in tasks])
    if "duration_ms" not in tk:
        tk["duration_ms"] = tk["finish_ms"] - tk["launch_ms"]
    return runs, st, tk


def test_a_run_without_a_slot_count_counts_its_executors_cores_as_its_slots():
    """A stage submitted at 0 beside another whose 2 tasks held 2 of the run's 4 slots (1 x 4
    cores, no task_slots recorded) waited 100 ms for its first task with slots free: driver time,
    kept in the replay (300 ms, as recorded). Read as 1 slot, the wait had been contention and
    the replay said 200 ms."""
    stages = [{"stage_id": 0, "submission_ms": 0, "completion_ms": 200},
              {"stage_id": 1, "submission_ms": 0, "completion_ms": 300}]
    tasks = [{"stage_id": 0, "launch_ms": 0, "finish_ms": 200}] * 2 + [{"stage_id": 1, "launch_ms": 100,
                                                                        "finish_ms": 300}]
    runs, st, tk = _one_run(stages, tasks, end_ms=300)
    tl = Timeline.from_tables(runs.drop(columns="task_slots"), st, tk)
    assert tl.cores == 4 and replay(tl, 1, 4).predicted_runtime_s == pytest.approx(0.3)


def test_one_host_core_is_a_host():
    """--host-cores 1 is a machine of one core, not a mistake: 8 tasks of 100 ms recorded on 2
    slots sharing it ran at 50 ms of CPU each, one at a time on any count: 400 ms."""
    tasks = [{"stage_id": 0, "launch_ms": (i // 2) * 100, "finish_ms": (i // 2 + 1) * 100} for i in range(8)]
    runs, st, tk = _one_run([{"stage_id": 0, "submission_ms": 0, "completion_ms": 400}], tasks, end_ms=400,
                            executor_cores=2, task_slots=2)
    tl = Timeline.from_tables(runs, st, tk)
    assert replay(tl, 1, 2, host_cores=1).predicted_runtime_s == pytest.approx(0.4)
    assert replay(tl, 4, 2, host_cores=1).predicted_runtime_s == pytest.approx(0.4)


def test_a_task_without_any_time_replays_as_zero_ms():
    """A task row with neither duration nor launch and finish (a cut log) takes no slot time."""
    tasks = [{"stage_id": 0, "launch_ms": 0, "finish_ms": 100, "duration_ms": 100},
             {"stage_id": 0, "launch_ms": np.nan, "finish_ms": np.nan, "duration_ms": np.nan}]
    tl = Timeline.from_tables(*_one_run([{"stage_id": 0, "submission_ms": 0, "completion_ms": 100}], tasks,
                                        end_ms=100))
    assert sorted(tl.task_duration_ms) == [0.0, 100.0]


# ---- the replay model's interval: jobs of one and two runs -------------------------------------
def test_a_job_of_two_runs_has_a_finite_interval_beside_a_job_of_one():
    """Two runs of a job measure a leave-one-out error for it: its interval is finite and
    contains the prediction; a job of one run beside it gets no finite bound."""
    from sparkpredict.models.replay import ReplayRuntimeModel

    other = make_run("o1", "other", [{**s, "name": s["name"].replace("wc.py", "o.py")}
                                     for s in wordcount_stages(GIB, 4, 4)], 4, 4, GIB, t0=10**12 + 9 * 10**7)
    tb = tables([_wc("a", GIB, t0=10**12), _wc("b", 2 * GIB, t0=10**12 + 10**7), other])
    model = ReplayRuntimeModel(tables=tb).fit(tb["runs"])
    iv = model.predict_interval(pd.DataFrame({"job": ["wc", "other"], "input_bytes": [1.5 * GIB, GIB],
                                              "executors": [4, 4]}), confidence=0.9)
    assert np.isfinite(iv["upper_s"][0]) and iv["lower_s"][0] < iv["predicted_runtime_s"][0] < iv["upper_s"][0]
    # a relative half-width under 95 % is taken off as it is added on
    p, q = iv["predicted_runtime_s"][0], iv["upper_s"][0] / iv["predicted_runtime_s"][0] - 1
    assert 0 < q < 0.95 and iv["lower_s"][0] == pytest.approx(p * (1 - q))
    # under 5 runs the bound widens by 5 % per doubling of executors and 10 % per doubling of
    # size away from the replayed run (here the 1 GiB run on 4 executors)
    X = pd.DataFrame({"job": "wc", "input_bytes": [GIB, GIB, 0.25 * GIB], "executors": [4, 16, 4]})
    w = model.predict_interval(X, confidence=0.9)
    q = w["upper_s"] / w["predicted_runtime_s"] - 1
    assert q[1] - q[0] == pytest.approx(0.05 * 2) and q[2] - q[0] == pytest.approx(0.10 * 2)
    assert q[0] == pytest.approx(float(np.quantile(model._abs_rel, 0.9)))  # no widening at the run itself
    # at a recorded run's own size and count, the replay of that run: its recorded wall time
    assert w["predicted_runtime_s"][0] == pytest.approx(tb["runs"].set_index("run_id").loc["a", "wall_ms"] / 1000)
    assert np.isinf(iv["upper_s"][1]) and iv["lower_s"][1] == 0



def test_a_parent_that_completed_in_the_ms_its_child_was_submitted_is_waited_for():
    """Spark submits a child in the millisecond its parent completes: the child still waits for
    it (150 ms on any count), not only for stages done strictly before (it had run at once,
    beside its parent: 100 ms)."""
    stages = [{"stage_id": 0, "submission_ms": 0, "completion_ms": 100},
              {"stage_id": 1, "submission_ms": 100, "completion_ms": 150, "parent_stage_ids_json": "[0]"}]
    tasks = [{"stage_id": 0, "launch_ms": 0, "finish_ms": 100}] * 2 + [{"stage_id": 1, "launch_ms": 100,
                                                                        "finish_ms": 150}]
    tl = Timeline.from_tables(*_one_run(stages, tasks, end_ms=150, executor_cores=2, task_slots=2))
    assert [list(p) for p in tl.parents] == [[], [0]]
    assert replay(tl, 1, 2).predicted_runtime_s == pytest.approx(0.15)
    assert replay(tl, 8, 2).predicted_runtime_s == pytest.approx(0.15)


def test_a_stages_third_attempt_waits_for_its_second():
    """Attempt k of a stage waits for attempt k - 1, the latest before it, not the first."""
    stages = [{"stage_id": 0, "stage_attempt_id": a, "submission_ms": 100 * a, "completion_ms": 100 * a + 50}
              for a in range(3)]
    tasks = [{"stage_id": 0, "stage_attempt_id": a, "launch_ms": 100 * a, "finish_ms": 100 * a + 50}
             for a in range(3)]
    tl = Timeline.from_tables(*_one_run(stages, tasks, end_ms=250))
    assert list(tl.stage_attempts) == [0, 1, 2] and [list(p) for p in tl.parents] == [[], [0], [1]]


@pytest.mark.parametrize("submitted, free", [(50, 100), (150, 50)])
def test_a_stages_lag_counts_only_the_time_a_slot_was_free_across_busy_spells(submitted, free):
    """On 2 slots, a stage submitted at 50 ms whose first task launched at 250 ms waited through
    a spell with both slots taken (100-200 ms): of its 200 ms lag, 100 ms had a slot free (50-100
    and 200-250) and is driver time, kept as its delay; the busy spell is contention. Submitted
    inside the busy spell (150 ms), only 200-250 was free."""
    stages = [{"stage_id": 0, "submission_ms": 0, "completion_ms": 300},
              {"stage_id": 1, "submission_ms": submitted, "completion_ms": 350}]
    tasks = [{"stage_id": 0, "launch_ms": 0, "finish_ms": 300}, {"stage_id": 0, "launch_ms": 100, "finish_ms": 200},
             {"stage_id": 1, "launch_ms": 250, "finish_ms": 350}]
    tl = Timeline.from_tables(*_one_run(stages, tasks, end_ms=350, executor_cores=2, task_slots=2))
    assert list(tl.stage_ids) == [0, 1] and tl.delay_ms[1] == pytest.approx(submitted + free)
    assert replay(tl, 1, 2).predicted_runtime_s == pytest.approx(0.3)  # 150 + 100 ms, beside the 300 ms task


@pytest.mark.parametrize("drop, run", [("executors_max", {}), ("executor_cores", {"executors_max": 3})])
def test_a_run_without_slot_or_executor_counts_reads_its_slots_from_its_busiest_moment(drop, run):
    """Without task_slots and one of executors or cores (3 executors of unknown cores are not 3
    slots), the recorded slots are the most tasks that ran at once (2): a stage that waited for 2 running tasks waited for slots, not for the
    driver, and the replay on 4 slots starts it at once (200 ms; 300 ms as recorded)."""
    stages = [{"stage_id": 0, "submission_ms": 0, "completion_ms": 200},
              {"stage_id": 1, "submission_ms": 0, "completion_ms": 300}]
    tasks = [{"stage_id": 0, "launch_ms": 0, "finish_ms": 200}] * 2 + [{"stage_id": 1, "launch_ms": 200,
                                                                        "finish_ms": 300}]
    runs, st, tk = _one_run(stages, tasks, end_ms=300, **run)
    tl = Timeline.from_tables(runs.drop(columns=["task_slots", drop]), st, tk)
    assert tl.delay_ms[1] == 0
    assert replay(tl, 1, 4).predicted_runtime_s == pytest.approx(0.2)


def test_the_leave_one_out_predicts_the_latest_40_runs():
    """The leave-one-out error predicts each of the latest 40 runs from the others (what the
    report and explain --job rank), not every run of a long history: of 42 runs, 40 ratios."""
    from sparkpredict.models.replay import ReplayRuntimeModel

    stages = [{"id": 0, "job_id": 0, "name": "count at t.py:1", "parents": [], "tasks": [100] * 4,
               "input_bytes": GIB}]
    runs = [make_run(f"r{i:02d}", "t", stages, 1, 4, GIB * (1 + i % 3), t0=10**12 + i * 10**7) for i in range(42)]
    tb = tables(runs)
    model = ReplayRuntimeModel(tables=tb).fit(tb["runs"])
    assert len(model.slow_runs_) == 40 and {r for r, _ in model.slow_runs_} == {f"r{i:02d}" for i in range(2, 42)}


def test_the_drivers_head_trend_is_the_least_squares_slope_per_executor():
    """Heads of 1000, 1100 and 1300 ms at 1, 2 and 4 executors: 100 ms more per executor (the
    line's slope; its intercept is 900 ms); two runs a count apart make a line (50 ms); a job at
    one count gets no trend."""
    from sparkpredict.models.replay import head_shift_s, head_trends

    runs = pd.DataFrame({"job": ["a", "a", "a", "b", "b", "c", "c"]},
                        index=["a1", "a2", "a4", "b1", "b2", "c1", "c2"])
    heads = {"a1": 1000.0, "a2": 1100.0, "a4": 1300.0, "b1": 500.0, "b2": 700.0, "c1": 400.0, "c2": 450.0}
    ex = pd.Series([1.0, 2.0, 4.0, 3.0, 3.0, 1.0, 2.0], index=runs.index)
    slopes = head_trends(runs, heads, ex)
    assert slopes == {"a": pytest.approx(100.0), "c": pytest.approx(50.0)}
    # from the 2-executor run to 4 executors: +0.2 s; beyond the runs' 1-4, no further
    assert head_shift_s(slopes["a"], 4, 2, (1, 4)) == pytest.approx(0.2)
    assert head_shift_s(slopes["a"], 64, 2, (1, 4)) == pytest.approx(0.2)


def test_a_stage_with_two_parents_waits_for_the_later_in_the_lower_bound():
    """A child submitted in the ms its slower parent completed (300 ms) waits for it, not for the
    faster one (100 ms): the critical path is 300 + 50 ms."""
    from sparkpredict.models.simulate import lower_bound_ms

    stages = [{"stage_id": 0, "submission_ms": 0, "completion_ms": 100},
              {"stage_id": 1, "submission_ms": 0, "completion_ms": 300},
              {"stage_id": 2, "submission_ms": 300, "completion_ms": 350, "parent_stage_ids_json": "[0, 1]"}]
    tasks = [{"stage_id": 0, "launch_ms": 0, "finish_ms": 100}, {"stage_id": 1, "launch_ms": 0, "finish_ms": 300},
             {"stage_id": 2, "launch_ms": 300, "finish_ms": 350}]
    tl = Timeline.from_tables(*_one_run(stages, tasks, end_ms=350))
    assert lower_bound_ms(tl, 64) == pytest.approx(350)
    assert replay(tl, 16, 4).predicted_runtime_s == pytest.approx(0.35)


@pytest.mark.parametrize("new, scale, want", [([1, 3], [1.0, 2.0], [[40.0], [20.0, 20.0, 20.0]]),
                                              ([3, 1], [0.5, 1.0], [[20.0, 20.0, 20.0], [10.0]]),
                                              ([0, 1], [1.0, 1.0], [[], [10.0]])])
def test_a_resized_stage_of_one_task_repeats_it(new, scale, want):
    """Resizing keeps each stage's recorded durations, cycled to the new count and scaled: a
    stage of one recorded task may grow to several and stay at one; 0 tasks is none."""
    stages = [{"stage_id": 0, "submission_ms": 0, "completion_ms": 40},
              {"stage_id": 1, "submission_ms": 40, "completion_ms": 50}]
    tasks = [{"stage_id": 0, "launch_ms": 0, "finish_ms": 40}, {"stage_id": 1, "launch_ms": 40, "finish_ms": 50}]
    tl = Timeline.from_tables(*_one_run(stages, tasks, end_ms=50)).resized(new, scale)
    off = tl.task_offsets
    assert [list(tl.task_duration_ms[off[s]:off[s + 1]]) for s in range(2)] == want


def test_a_query_may_set_a_max_partition_size_of_one_byte():
    """max_partition_bytes is a positive number of bytes: 1 is one, 0 is refused."""
    from sparkpredict.errors import InputError
    from sparkpredict.models.replay import checked_query

    ok = checked_query(pd.DataFrame({"input_bytes": [GIB], "executors": [2], "max_partition_bytes": [1]}))
    assert ok["max_partition_bytes"].tolist() == [1]
    with pytest.raises(InputError, match="max_partition_bytes"):
        checked_query(pd.DataFrame({"input_bytes": [GIB], "executors": [2], "max_partition_bytes": [0]}))


@pytest.mark.parametrize("name, good, bad", [("memory_fraction", [0.6, 1.0], [0.0, 1.5]),
                                             ("shuffle_compress", [0, 1], [2, 0.5])])
def test_a_querys_memory_fraction_and_shuffle_compression_are_checked(name, good, bad):
    """memory_fraction is above 0 and at most 1; shuffle_compress is a flag, 0 or 1."""
    from sparkpredict.errors import InputError
    from sparkpredict.models.replay import checked_query

    for v in good:
        assert checked_query(pd.DataFrame({"input_bytes": [GIB], "executors": [2], name: [v]}))[name].tolist() == [v]
    for v in bad:
        with pytest.raises(InputError, match=name):
            checked_query(pd.DataFrame({"input_bytes": [GIB], "executors": [2], name: [v]}))


def test_a_lag_from_a_moment_every_slot_was_taken_counts_from_when_one_freed():
    """Both slots were taken from the first launch (0-100 ms): a stage submitted at 50 whose task
    launched at 150 had a slot free for 50 ms of its lag (100-150), not 100."""
    stages = [{"stage_id": 0, "submission_ms": 0, "completion_ms": 100},
              {"stage_id": 1, "submission_ms": 50, "completion_ms": 250}]
    tasks = [{"stage_id": 0, "launch_ms": 0, "finish_ms": 100}] * 2 + [{"stage_id": 1, "launch_ms": 150,
                                                                        "finish_ms": 250}]
    tl = Timeline.from_tables(*_one_run(stages, tasks, end_ms=250, executor_cores=2, task_slots=2))
    assert tl.delay_ms[1] == pytest.approx(100)  # 50 submitted + 50 free


@pytest.mark.parametrize("execs, cores", [(1, 2), (4, 1)])
def test_a_run_without_cores_or_slots_reads_its_cores_from_its_busiest_moment(execs, cores):
    """No executor_cores and no task_slots: 2 tasks ran at once, so one executor had 2 cores (and
    the replay at the recorded count is the recording); 4 executors had at least 1 each."""
    stages = [{"stage_id": 0, "submission_ms": 0, "completion_ms": 200}]
    tasks = [{"stage_id": 0, "launch_ms": 0, "finish_ms": 100}] * 4
    tasks = tasks[:2] + [{"stage_id": 0, "launch_ms": 100, "finish_ms": 200}] * 2
    runs, st, tk = _one_run(stages, tasks, end_ms=200)
    tl = Timeline.from_tables(runs.drop(columns=["executor_cores", "task_slots"]).assign(executors_max=execs), st, tk)
    assert (tl.executors, tl.cores) == (execs, cores)
    assert replay(tl, execs).predicted_runtime_s == pytest.approx(0.2 if execs == 1 else 0.1)


@pytest.mark.parametrize("slots, execs, cores", [(8, 2, 4), (6, 4, 1), (2, 4, 1)])
def test_a_run_without_executor_cores_reads_them_from_its_slots(slots, execs, cores):
    """Without executor_cores, each executor has the run's task slots over its executors, whole
    and at least 1 (slots counted per executor: 6 slots on 4 executors that came and went are
    1 each, 2 slots on 4 executors 1, not 0)."""
    tasks = [{"stage_id": 0, "launch_ms": 0, "finish_ms": 100}]
    runs, st, tk = _one_run([{"stage_id": 0, "submission_ms": 0, "completion_ms": 100}], tasks, end_ms=100,
                            executors_max=execs, task_slots=slots)
    tl = Timeline.from_tables(runs.drop(columns="executor_cores"), st, tk)
    assert (tl.executors, tl.cores) == (execs, cores) and isinstance(tl.cores, int)


def test_the_critical_path_of_a_run_without_stages_is_its_driver_time():
    """A run that ran no stage (num_tasks 0) has only its driver time: its critical path, one
    answer or one per tree, is that time (500 ms)."""
    from sparkpredict.models.simulate import _critical_path

    runs = pd.DataFrame([{"run_id": "r", "job": "j", "start_ms": 0, "end_ms": 500, "num_tasks": 0,
                          "executors_max": 1, "executor_cores": 2, "task_slots": 2}])
    st = pd.DataFrame(columns=["run_id", "stage_id", "stage_attempt_id", "submission_ms", "completion_ms"])
    tk = pd.DataFrame(columns=["run_id", "stage_id", "stage_attempt_id", "launch_ms", "finish_ms", "duration_ms",
                               "executor_id"])
    tl = Timeline.from_tables(runs, st, tk)
    assert tl.n_stages == 0
    assert _critical_path(tl, np.zeros(0)) == pytest.approx(500.0)
    assert list(_critical_path(tl, np.zeros((3, 0)))) == pytest.approx([500.0] * 3)


def test_a_job_of_one_run_beside_five_has_no_finite_interval():
    """With 5 runs or more the leave-one-out errors bound the interval, but not for a job of one
    run: the other jobs' errors say nothing about its spread."""
    from sparkpredict.models.replay import ReplayRuntimeModel

    other = make_run("o1", "other", [{**s, "name": s["name"].replace("wc.py", "o.py")}
                                     for s in wordcount_stages(GIB, 4, 4)], 4, 4, GIB, t0=10**12 + 9 * 10**7)
    wc = [_wc(f"w{i}", GIB * (1 + i), t0=10**12 + i * 10**7) for i in range(5)]
    tb = tables([*wc, other])
    model = ReplayRuntimeModel(tables=tb).fit(tb["runs"])
    iv = model.predict_interval(pd.DataFrame({"job": ["wc", "other"], "input_bytes": [1.5 * GIB, GIB],
                                              "executors": [4, 4]}), confidence=0.9)
    assert np.isfinite(iv["upper_s"][0]) and np.isinf(iv["upper_s"][1])


def test_a_stage_without_recorded_tasks_stays_without_when_resized():
    """A stage row with no task rows has no durations to cycle: asked for 3 tasks it gets none."""
    stages = [{"stage_id": 0, "submission_ms": 0, "completion_ms": 40},
              {"stage_id": 1, "submission_ms": 40, "completion_ms": 50}]
    tl = Timeline.from_tables(*_one_run(stages, [{"stage_id": 0, "launch_ms": 0, "finish_ms": 40}], end_ms=50))
    big = tl.resized([2, 3], [1.0, 1.0])
    assert list(big.task_offsets) == [0, 2, 2] and list(big.task_duration_ms) == [40.0, 40.0]


def test_a_reference_run_that_read_nothing_is_replayed_as_recorded():
    """A run of 0 input bytes (a generated dataset) has no size to scale its tasks by: a query
    with a size replays it as it ran, not at an infinite ratio."""
    from sparkpredict.models.replay import ReplayRuntimeModel

    stages = [{"id": 0, "job_id": 0, "name": "range at g.py:1", "parents": [], "tasks": [100] * 4}]
    tb = tables([make_run("g", "gen", stages, 1, 4, 0, t0=10**12)])
    model = ReplayRuntimeModel(tables=tb).fit(tb["runs"])
    wall = float(tb["runs"]["wall_ms"].iloc[0]) / 1000
    assert model.predict(pd.DataFrame({"job": ["gen"], "input_bytes": [GIB], "executors": [1]}))[0] == \
        pytest.approx(wall)
