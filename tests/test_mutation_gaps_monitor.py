"""The slowdown monitor's rules at their boundaries, where the other monitor tests checked values
well inside them: each test here failed on a one-operator change of the rule it pins (a mutation
audit of monitor_baseline, monitor_explain and monitor_training: the size tolerance and task
ratio taken inclusively, failed tasks left out of a run's count, the "below 3 runs" warning,
which runs are clean, the cause and QoS thresholds, D's median and ratio, the training minimums,
the ranking of stages and of runs). The explanation's rules are pinned on a run whose measured and
estimated slowdowns are given exactly. No JVM: known frames and small synthetic stores.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sparkpredict import monitor_baseline as mb


def _runs(sizes=None, tasks=None, failed=None, n=None):
    n = n or len(sizes or tasks)
    return pd.DataFrame({
        "run_id": [f"r{i}" for i in range(n)], "master": ["local[1]"] * n, "status": ["succeeded"] * n,
        "executors_requested": [1] * n, "executor_cores": [1] * n,
        "input_bytes": sizes or [100] * n, "num_tasks": tasks or [20] * n, "num_failed_tasks": failed or [0] * n})


def test_an_input_exactly_the_tolerance_away_is_the_same_setup_and_a_byte_more_is_not():
    # "an input size within 5 % of its own": 105 and 95 bytes are within 5 % of 100, 106 and 94 not
    runs = _runs(sizes=[100, 105, 95, 106, 94])
    assert sorted(mb.same_setup(mb.setups(runs), "r0", runs["run_id"])) == ["r1", "r2"]


def test_a_task_count_exactly_the_ratio_away_is_the_same_setup_and_one_more_is_not():
    # "a task count within 1.5x of its own", either way round: 30 tasks against 20 is in, 31 and
    # 13 are out; and 20 against 30 is in as well
    runs = _runs(tasks=[20, 30, 31, 13])
    table = mb.setups(runs)
    assert mb.same_setup(table, "r0", runs["run_id"]) == ["r1"]
    assert "r0" in mb.same_setup(table, "r1", runs["run_id"])


def test_failed_task_attempts_are_not_the_runs_work():
    # 30 attempts of which 12 failed is the 18 tasks of its twin, not 30 (nor 42)
    runs = _runs(tasks=[18, 30], failed=[0, 12])
    table = mb.setups(runs)
    assert list(table["tasks"]) == [18.0, 18.0]
    assert mb.same_setup(table, "r0", runs["run_id"]) == ["r1"]


def test_a_baseline_of_fewer_than_three_runs_is_warned_about_and_three_are_not():
    runs = _runs(n=4)
    thin = mb.Baseline(frozenset({"r1", "r2"}), mb.SAME_SETUP, "1 executor of 1 core")
    firm = mb.Baseline(frozenset({"r1", "r2", "r3"}), mb.SAME_SETUP, "1 executor of 1 core")
    (said,) = mb.notes(thin, runs, "r0", "etl")
    assert said.startswith("its expected time comes from 2 other runs of its setup only")
    assert mb.notes(firm, runs, "r0", "etl") == []


def test_no_run_to_compare_with_is_not_called_a_comparison_with_all_zero_of_them():
    # a job's only run (explained by a model's autoencoder, which needs no clean run) has no
    # baseline: the warning about "all 0 of its other runs" of any setup would be false
    runs = _runs(n=1)
    none = mb.choose(mb.setups(runs), "r0", runs["run_id"])
    assert (none.kind, none.run_ids) == (mb.ANY_SETUP, frozenset())
    assert mb.notes(none, runs, "r0", "etl") == []


# ---- the explanation's rules, on a run whose measured and estimated slowdowns are given -------
class _Model:
    """A trained monitor reduced to what the rules read: its estimate per stage, and the stage
    time of the shortest run it learnt from."""

    dae_ = None

    def __init__(self, est, shortest_ms=None):
        self.est, self.train_run_ms_ = est, None if shortest_ms is None else (shortest_ms, 10 * shortest_ms)

    def predict(self, rows, x0=None):
        return np.full(len(rows), self.est)

    def host_culprit(self, rows):
        return None


def _explained(monkeypatch, *, d, est, phi=None, total_ms=10_000.0, shortest_ms=None, kind=mb.LABELLED,
               threshold=0.10, stages=None):
    """``_explain`` of run r0 measured ``d`` and estimated ``est`` slower, with Shapley values
    ``phi`` (all to cpu by default), against r1-r3."""
    from sparkpredict import monitor_explain as mx

    phi = phi if phi is not None else {"cpu": est, "memory": 0.0, "network": 0.0, "disk": 0.0}
    monkeypatch.setattr(mx, "run_degradation", lambda rows: (total_ms, total_ms / (1 + d), d))
    monkeypatch.setattr(mx, "run_estimate", lambda model, rows: est)
    monkeypatch.setattr(mx, "shapley", lambda model, rows, host: dict(phi))
    rows = stages if stages is not None else pd.DataFrame({
        "run_id": ["r0"], "stage_id": [0], "name": ["count at job.py:3"], "duration_ms": [total_ms],
        "expected_ms": [total_ms / (1 + d)], "degradation": [d], "label": [None]})
    base = {"r0": mb.Baseline(frozenset({"r1", "r2", "r3"}), kind, "1 executor of 1 core" if kind != mb.LABELLED else "")}
    return mx._explain("r0", "etl", _Model(est, shortest_ms), rows, base, threshold, 3, _runs(n=4))


def test_an_estimate_of_exactly_the_cause_minimum_names_a_cause(monkeypatch):
    # "metrics estimate a slowdown under 5 %" get no cause: 5 % itself is not under
    assert _explained(monkeypatch, d=0.3, est=0.05).main_cause == "cpu"
    assert _explained(monkeypatch, d=0.3, est=0.049).main_cause is None


def test_a_short_run_measured_exactly_the_cause_minimum_slower_is_confirmed(monkeypatch):
    # a run under half the shortest training run gets a cause "only when its clean runs confirm
    # a slowdown of 5 % or more"
    e = _explained(monkeypatch, d=0.05, est=0.3, total_ms=1000.0, shortest_ms=6600.0)
    assert e.too_short and not e.cause_withheld and e.main_cause == "cpu"
    e = _explained(monkeypatch, d=0.049, est=0.3, total_ms=1000.0, shortest_ms=6600.0)
    assert e.too_short and e.cause_withheld and e.main_cause is None


def test_a_run_of_exactly_half_the_shortest_training_run_is_not_too_short(monkeypatch):
    # "for a run under half that": half itself is inside the trained range
    assert not _explained(monkeypatch, d=0.3, est=0.3, total_ms=3300.0, shortest_ms=6600.0).too_short
    assert _explained(monkeypatch, d=0.3, est=0.3, total_ms=3299.0, shortest_ms=6600.0).too_short


def test_a_run_exactly_at_the_threshold_meets_it(monkeypatch):
    # violated "when the measured degradation exceeds the threshold": at it, it is met
    e = _explained(monkeypatch, d=0.10, est=0.3, threshold=0.10)
    assert not e.violated and e.qos == {0.05: True, 0.10: False, 0.20: False}
    assert _explained(monkeypatch, d=0.20, est=0.3, threshold=0.20).qos[0.20] is False
    # the measurement decides, not the estimate: measured 0 % is met whatever the metrics say
    assert not _explained(monkeypatch, d=0.0, est=0.5).violated


def test_half_the_stage_time_matched_is_enough_to_say_nothing(monkeypatch):
    # the comparison is warned about "below" half of the run's stage time matched
    def two(other_ms):
        return pd.DataFrame({"run_id": ["r0", "r0"], "stage_id": [0, 1], "name": ["a at x:1", "b at x:2"],
                             "duration_ms": [500.0, other_ms], "expected_ms": [400.0, np.nan],
                             "degradation": [0.25, np.nan], "label": [None, None]})

    half = _explained(monkeypatch, d=0.25, est=0.3, stages=two(500.0))
    assert half.matched_share == 0.5 and not any("of this run's stage time" in w for w in half.warnings)
    less = _explained(monkeypatch, d=0.25, est=0.3, stages=two(501.0))
    assert any(w.startswith("only 50% of this run's stage time") for w in less.warnings)


def test_a_cause_the_time_did_not_show_is_said_below_the_cause_minimum(monkeypatch):
    # named by the estimate, measured +2 %: under the 5 % a cause needs, so the note says so
    e = _explained(monkeypatch, d=0.02, est=0.3)
    assert e.main_cause == "cpu"
    assert any("+2.0% against the clean runs" in w and "did not show in its time" in w for w in e.warnings)
    assert not any("did not show" in w for w in _explained(monkeypatch, d=0.05, est=0.3).warnings)


def test_measured_exactly_the_threshold_with_no_cause_is_not_said_slower(monkeypatch):
    e = _explained(monkeypatch, d=0.10, est=0.01, threshold=0.10)
    assert e.main_cause is None and e.no_cause() == "an estimated slowdown under 5%"
    assert "yet it measured +11.0%" in _explained(monkeypatch, d=0.11, est=0.01).no_cause()


def test_a_runner_up_exactly_the_near_tie_behind_is_named():
    # "a second group whose share is within this of the main cause's is named beside it"
    import dataclasses

    from sparkpredict.monitor_explain import NEAR_TIE, Explanation

    shares = {"memory": 0.33, "cpu": 0.23, "network": 0.22, "disk": 0.22}
    assert shares["memory"] - shares["cpu"] == NEAR_TIE  # exactly, in floats too
    e = Explanation("r", "etl", 1.0, 1.0, 0.3, 0.3, {}, shares, "memory", 0.33, {}, 0.1, True, 3, None, [])
    assert e.runner_up() == ", nearly tied with cpu (23%)"
    apart = dataclasses.replace(e, main_share=0.34, shares={**shares, "memory": 0.34, "network": 0.21})
    assert apart.runner_up() == ""


def test_shares_are_the_positive_contributions_normalised(monkeypatch):
    # a group whose features made the run look faster takes no share of the slowdown
    e = _explained(monkeypatch, d=0.3, est=0.3, phi={"cpu": 0.3, "memory": -0.1, "network": 0.1, "disk": 0.0})
    assert e.shares == pytest.approx({"cpu": 0.75, "memory": 0.0, "network": 0.25, "disk": 0.0})
    assert (e.main_cause, e.main_share) == ("cpu", pytest.approx(0.75))
    assert e.contributions["memory"] == -0.1


# ---- time outside the stages: OUTSIDE_STAGES_MIN_S seconds and OUTSIDE_STAGES_SHARE of the clean runs'
class _Stages:
    """A store that holds only stage windows: run_id -> [(submission_ms, completion_ms), ...]."""

    def __init__(self, windows):
        self.windows = windows

    def read(self, table, columns=None, run_ids=None):
        assert table == "stages"
        return pd.DataFrame([{"run_id": r, "submission_ms": a, "completion_ms": b}
                             for r, iv in self.windows.items() if r in run_ids for a, b in iv])


def _outside(mine_ms, typical_ms, busy_ms=10_000):
    """The warnings of run r0 that spent ``mine_ms`` with no stage running, its clean runs r1-r3
    ``typical_ms`` each, all with ``busy_ms`` of stages."""
    from sparkpredict.monitor_explain import Explanation, _outside_stages

    e = Explanation("r0", "etl", 1.0, 1.0, 0.0, 0.0, {}, {}, None, 0.0, {}, 0.1, False, 3, None, [])
    walls = {"r0": busy_ms + mine_ms, **{f"r{i}": busy_ms + typical_ms for i in (1, 2, 3)}}
    runs = pd.DataFrame({"run_id": list(walls), "wall_ms": list(walls.values())})
    _outside_stages(e, _Stages({r: [(1000, 1000 + busy_ms)] for r in walls}), runs, ["r1", "r2", "r3"])
    assert e.wall_ms == walls["r0"]
    return [w for w in e.warnings if "with no stage running" in w]


def test_time_outside_the_stages_is_warned_about_beyond_five_seconds_more_than_the_clean_runs():
    assert _outside(6_000, 1_000) == []  # 5 s more: not beyond
    (said,) = _outside(6_001, 1_000)
    assert said.startswith("the run spent 6.0s with no stage running (of 16.0s from start to end), its clean "
                           "runs a median 1.0s"), said
    # and beyond half the clean runs' own, where that is more than 5 s
    assert _outside(30_000, 20_000) == []
    assert len(_outside(30_001, 20_000)) == 1


def test_the_windows_read_once_for_many_runs_judge_a_run_as_its_own_read_does():
    # explain --job reads the stage windows of every run it lists and their clean runs at once: a
    # run is judged against its own clean runs only, not the other listed runs (r4's 60 s outside
    # its stages would move the clean runs' median, 1 s, and hide the warning)
    from sparkpredict.monitor_explain import Explanation, _outside_stages

    busy = 10_000
    walls = {"r0": busy + 7_000, **{f"r{i}": busy + 1_000 for i in (1, 2, 3)}, "r4": busy + 60_000,
             "r5": busy + 60_000}
    runs = pd.DataFrame({"run_id": list(walls), "wall_ms": list(walls.values())})
    st = _Stages({r: [(1000, 1000 + busy)] for r in walls})
    said = []
    for windows in (None, st.read("stages", run_ids=list(walls))):
        e = Explanation("r0", "etl", 1.0, 1.0, 0.0, 0.0, {}, {}, None, 0.0, {}, 0.1, False, 3, None, [])
        _outside_stages(e, st, runs, ["r1", "r2", "r3"], windows)
        said.append((e.wall_ms, e.warnings))
    assert said[0] == said[1] and said[0][0] == 17_000.0
    assert len(said[0][1]) == 1 and "its clean runs a median 1.0s" in said[0][1][0]


def test_overlapping_stages_count_once_as_busy_time():
    from sparkpredict.monitor_explain import _busy_ms

    windows = pd.DataFrame({"submission_ms": [0, 500, 2000, 2100], "completion_ms": [1000, 1500, 3000, 2200]})
    assert _busy_ms(windows) == 2500.0
    assert _busy_ms(windows.iloc[[2, 0, 3, 1]]) == 2500.0  # in any order


def test_a_stage_whose_clean_runs_took_0_ms_is_no_counterpart(monkeypatch):
    # a ratio to 0 ms measures nothing (run_degradation leaves such stages out): the matched share
    # leaves it out too, and a run with nothing else to compare is refused, not explained
    from sparkpredict.errors import DegenerateDataError

    def stages(expected):
        return pd.DataFrame({"run_id": ["r0", "r0"], "stage_id": [0, 1], "name": ["a at x:1", "b at x:2"],
                             "duration_ms": [400.0, 600.0], "expected_ms": expected,
                             "degradation": [0.25, np.inf], "label": [None, None]})

    e = _explained(monkeypatch, d=0.25, est=0.3, stages=stages([320.0, 0.0]))
    assert e.matched_share == pytest.approx(0.4)
    assert any(w.startswith("only 40% of this run's stage time") for w in e.warnings)
    with pytest.raises(DegenerateDataError, match="none of its 2 stages matches"):
        _explained(monkeypatch, d=0.25, est=0.3, stages=stages([0.0, 0.0]))


# ---- training: at least 5 interfered and 2 clean runs of jobs that have both ----------------------
def _labelled_store(path, interfered, clean):
    from test_monitor import _store_with_runs

    plan = [(f"clean{i}", "none", 1.0, "none") for i in range(clean)]
    plan += [(f"cpu{i}", "cpu:1", 1.3 + 0.15 * i, "cpu") for i in range(interfered)]
    return _store_with_runs(path, plan)


@pytest.mark.parametrize("interfered, clean, said", [
    (4, 2, "4 interfered runs and 2 clean runs of jobs that have both"),
    (5, 1, "5 interfered runs and 1 clean run of jobs that have both"),
])
def test_one_run_short_of_either_minimum_is_refused(tmp_path, interfered, clean, said):
    from sparkpredict import monitor as m
    from sparkpredict.errors import DegenerateDataError

    st = _labelled_store(tmp_path / "s", interfered, clean)
    with pytest.raises(DegenerateDataError, match=said):
        m.fit_monitor(st)
    assert m.default_model(st).train_run_ms_ == m.default_model().train_run_ms_  # the bundled one


def test_exactly_the_minimum_of_labelled_runs_is_trained_on(tmp_path):
    from sparkpredict import monitor as m

    st = _labelled_store(tmp_path / "s", 5, 2)
    assert m.fit_monitor(st, autoencoder=False, n_estimators=20).train_run_ms_ is not None
    assert m.default_model(st).train_run_ms_ != m.default_model().train_run_ms_  # its own runs


def test_stages_are_listed_by_the_time_they_lost(monkeypatch):
    # "stages most affected": most ms over expected first; a stage without a clean counterpart
    # by its estimate (1200 ms at +50 % estimated lost 400 ms)
    rows = pd.DataFrame({"run_id": ["r0"] * 3, "stage_id": [0, 1, 2], "name": ["a at x:1", "b at x:2", "c at x:3"],
                         "duration_ms": [1000.0, 600.0, 1200.0], "expected_ms": [900.0, 300.0, np.nan],
                         "degradation": [1 / 9, 1.0, np.nan], "label": [None] * 3})
    e = _explained(monkeypatch, d=0.3, est=0.5, stages=rows)
    assert [s.stage_id for s in e.stages] == [2, 1, 0]
    assert (e.stages[1].expected_ms, e.stages[1].degradation) == (300.0, 1.0)
    assert (e.stages[0].expected_ms, e.stages[0].degradation, e.stages[0].estimated_degradation) == (None, None, 0.5)


# ---- D = actual / expected - 1, expected the median of the other clean runs --------------------
def test_expected_is_the_median_not_the_mean_and_d_is_actual_over_expected():
    from test_monitor import _feature_frame

    # one clean run far off: the median (200) sets it aside, a mean (300) would not
    df = _feature_frame({"c1": [100], "c2": [200], "c3": [600], "x": [300]}, ["c1", "c2", "c3"])
    x = df[df.run_id == "x"].iloc[0]
    assert x["expected_ms"] == 200 and x["degradation"] == pytest.approx(0.5)
    fast = _feature_frame({"c1": [100], "c2": [200], "c3": [600], "x": [100]}, ["c1", "c2", "c3"])
    assert fast[fast.run_id == "x"].iloc[0]["degradation"] == pytest.approx(-0.5)  # not 200/100 - 1


def test_a_runs_degradation_leaves_out_stages_without_a_measurable_baseline():
    from sparkpredict import monitor as m

    rows = pd.DataFrame({"duration_ms": [100.0, 50.0, 70.0], "expected_ms": [80.0, 0.0, np.nan]})
    assert m.run_degradation(rows) == (100.0, 80.0, pytest.approx(0.25))
    assert np.isnan(m.run_degradation(rows.iloc[1:])[2])  # nothing to compare


# ---- which runs are clean -----------------------------------------------------------------------
def _with_status(st, statuses):
    """``st`` with the runs of ``statuses`` (run_id -> status) recorded again under that status."""
    import pyarrow as pa

    for rid, status in statuses.items():
        row = st.read("runs", form="arrow", run_ids=[rid])
        for c, v in (("status", pa.array([status])), ("updated_ms", pa.array([row["updated_ms"][0].as_py() + 1],
                                                                              pa.int64()))):
            row = row.set_column(row.schema.get_field_index(c), c, v)
        st.append({"runs": row})
    return st


def test_incomplete_runs_labelled_none_are_clean_and_failed_ones_are_not(tmp_path):
    # "Only succeeded and incomplete runs serve as clean runs or training data"
    from test_monitor import _store_with_runs

    from sparkpredict.monitor_training import _stages_and_baselines

    plan = [(f"clean{i}", "none", 1.0, "none") for i in range(3)] + [("victim", "cpu:1", 1.7, "cpu")]
    st = _with_status(_store_with_runs(tmp_path / "s", plan), {"clean1": "incomplete", "clean2": "failed"})
    assert st.runs().set_index("run_id").loc[["clean1", "clean2"], "status"].tolist() == ["incomplete", "failed"]
    df, baselines = _stages_and_baselines(st, ["etl"])
    assert baselines["victim"].run_ids == frozenset({"clean0", "clean1"})
    assert "clean2" not in set(df["run_id"])  # a failed run is explained only when asked about
    # asked about together, the failed run is explained against the clean ones, and is none of theirs
    _, asked = _stages_and_baselines(st, ["etl"], run_ids=["victim", "clean2"])
    assert asked["victim"].run_ids == asked["clean2"].run_ids == frozenset({"clean0", "clean1"})


def test_without_runs_labelled_none_the_interfered_ones_are_no_baseline(tmp_path):
    # a labelled job with no run labelled none is compared "with the job's runs not labelled as
    # interfered with": never with another run labelled cpu:1
    from test_monitor import _store_with_runs

    from sparkpredict.monitor_training import _stages_and_baselines

    plan = [(f"run{i}", None, 1.0, "none") for i in range(3)]
    plan += [("bubbled", "cpu:1", 1.6, "cpu"), ("victim", "cpu:2", 1.7, "cpu")]
    _, baselines = _stages_and_baselines(_store_with_runs(tmp_path / "s", plan), ["etl"])
    assert baselines["victim"].run_ids == frozenset({"run0", "run1", "run2"})
    assert (baselines["victim"].kind, baselines["victim"].labelled_runs) == (mb.SAME_SETUP, 2)


def test_without_a_ratio_runs_are_ranked_by_their_measured_slowdown_the_unexplained_last(tmp_path, monkeypatch):
    # a model with no out-of-fold ratios whose prediction is the run's own replay (in sample, it
    # reads about 1.00x): slowest_runs ranks by the slowdown measured against the clean runs, and
    # a run that could not be compared comes after every measured one
    import types

    from test_monitor import _store_with_runs

    from sparkpredict import monitor as m
    from sparkpredict.advice_source import HistorySource

    plan = [(f"clean{i}", "none", 1.0, "none") for i in range(3)]
    plan += [(f"cpu{i}", "cpu:1", f, "cpu") for i, f in enumerate([1.3, 1.6, 2.0, 1.45, 1.8])]
    plan += [("alien", None, 1.0, "none")]
    st = _store_with_runs(tmp_path / "s", plan, names={"alien": ["read at other.py:1"]})
    model = m.fit_monitor(st, autoencoder=False, n_estimators=20)
    listed = [("alien", 1.0), ("cpu0", 1.0), ("cpu2", 1.0), ("cpu1", 1.0)]
    src = types.SimpleNamespace(model=object(), model_name="replay", n_runs=1,
                                runs_above_model=lambda k, min_ratio: listed[:k])
    monkeypatch.setattr(HistorySource, "resolve", classmethod(lambda cls, job, **kw: src))
    found = m.slowest_runs("etl", st, top=4, models=model)
    assert [r.run_id for r in found] == ["cpu2", "cpu1", "cpu0", "alien"]
    assert all(r.runtime_over_model is None for r in found) and found[-1].error is not None
    assert [r.run_id for r in m.slowest_runs("etl", st, top=2, models=model)] == ["cpu2", "cpu1"]
