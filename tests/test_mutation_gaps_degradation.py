"""The slowdown monitor's estimator with values known exactly: a model whose correction weight
is 0 estimates a run's ``D`` as its prior alone, the summed change of the run-time components
over the baseline's run time (docs/monitor.md, "Estimated degradation"), so a run built with
given component changes has a known estimate, and the Shapley attribution of that estimate has
known values (efficiency, symmetry, a null group at 0, the wait shared by the culprit's
probabilities, the clip of the prior making the game non-additive). Each test here failed on a
one-operator change of degradation.py (a mutation audit). No JVM: known frames.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from sparkpredict.errors import DegenerateDataError
from sparkpredict.features.interference import FEATURES, GROUPS
from sparkpredict.models.degradation import (
    DegradationModel,
    run_degradation,
    run_estimate,
    shapley,
)

#: every feature's clean value: distinct and positive, so log-ratios are defined
BASE = {f: 0.2 + 0.01 * i for i, f in enumerate(FEATURES)}


def _stage(run_id, stage_id, deltas=None, n=1, base_run_ms=1000.0, run_ms=None, duration_ms=None,
           expected_ms=1000.0):
    """A stage row whose features are the clean baseline's except the run-time components in
    ``deltas`` (mean ms per task more than the baseline)."""
    x = dict(BASE)
    for f, d in (deltas or {}).items():
        x[f] = BASE[f] + d
    return {"run_id": run_id, "stage_id": stage_id, "num_tasks": n, "base_run_ms": base_run_ms,
            "run_ms": run_ms if run_ms is not None else base_run_ms, "expected_ms": expected_ms,
            "duration_ms": duration_ms if duration_ms is not None else expected_ms,
            **x, **{f"base_{f}": v for f, v in BASE.items()}}


def _frame(*stages):
    df = pd.DataFrame(list(stages))
    df["degradation"] = df["duration_ms"] / df["expected_ms"] - 1
    return df


@pytest.fixture(scope="module")
def model():
    # a correction of weight 0: the estimate is the prior alone, whatever the boosting learnt
    rng = np.random.default_rng(0)
    train = _frame(*(_stage(f"t{i}", 0, {"wait_ms": float(w)}, duration_ms=1000.0 + w)
                     for i, w in enumerate(rng.uniform(0, 500, 12))))
    m = DegradationModel(culprit="none", correction=0.0, n_estimators=5).fit(train)
    assert m.correction_ == 0.0 and m.culprit_ is None
    return m


def test_the_estimate_is_the_runs_summed_component_change_over_its_baseline_run_time(model):
    # stage 0: 10 tasks of 100 ms that waited 50 ms more; stage 1: 2 tasks of 1 s that took
    # 250 ms more CPU time: 500 + 500 ms more over 1000 + 2000 ms of baseline is D = 1/3, on
    # every stage of the run (the prior is the run's, not the stage's)
    run = _frame(_stage("x", 0, {"wait_ms": 50.0}, n=10, base_run_ms=100.0),
                 _stage("x", 1, {"cpu_ms": 250.0}, n=2, base_run_ms=1000.0))
    assert model.predict(run) == pytest.approx([1 / 3, 1 / 3], abs=1e-12)
    assert run_estimate(model, run) == pytest.approx(1 / 3, abs=1e-12)
    # each component counts, with its sign: 100 more GC, 100 more fetch wait, 50 less write time
    run = _frame(_stage("x", 0, {"gc_ms": 100.0, "fetch_ms": 100.0, "write_ms": -50.0}, n=4))
    assert run_estimate(model, run) == pytest.approx(150 / 1000, abs=1e-12)


def test_each_run_in_a_frame_gets_its_own_prior(model):
    both = _frame(_stage("x", 0, {"wait_ms": 300.0}), _stage("y", 0), _stage("y", 1, {"wait_ms": 100.0}, n=3))
    # x: 300 over 1000; y: 300 over 1000 + 3000
    assert model.predict(both) == pytest.approx([0.3, 0.075, 0.075], abs=1e-12)


def test_a_stage_without_a_baseline_run_time_is_scaled_by_its_own_and_never_below_a_ms(model):
    # no baseline run time: its own (400 ms) stands in
    run = _frame(_stage("x", 0, {"wait_ms": 100.0}, base_run_ms=float("nan"), run_ms=400.0))
    assert run_estimate(model, run) == pytest.approx(0.25, abs=1e-12)
    # a baseline under 1 ms per task counts as 1 ms
    run = _frame(_stage("x", 0, {"wait_ms": 0.5}, base_run_ms=0.25))
    assert run_estimate(model, run) == pytest.approx(0.5, abs=1e-12)


def test_the_estimate_is_clipped_to_minus_half_and_twenty(model):
    assert run_estimate(model, _frame(_stage("x", 0, {"wait_ms": 30_000.0}))) == pytest.approx(20.0)
    assert run_estimate(model, _frame(_stage("x", 0, {"wait_ms": 19_000.0}))) == pytest.approx(19.0)
    assert run_estimate(model, _frame(_stage("x", 0, {"wait_ms": -900.0}))) == pytest.approx(-0.5)
    assert run_estimate(model, _frame(_stage("x", 0, {"wait_ms": -400.0}))) == pytest.approx(-0.4)


def test_shapley_of_an_additive_estimate_is_each_groups_own_change_and_the_wait_goes_by_the_culprit(model):
    # 400 ms more wait, 100 ms more CPU time, 200 ms more fetch wait on a 1 s baseline: D = 0.7
    run = _frame(_stage("x", 0, {"wait_ms": 400.0, "cpu_ms": 100.0, "fetch_ms": 200.0}))
    assert run_estimate(model, run) == pytest.approx(0.7, abs=1e-12)
    # no culprit model: the whole wait is cpu's; disk changed nothing and gets 0
    phi = shapley(model, run)
    assert phi == pytest.approx({"cpu": 0.4, "memory": 0.1, "network": 0.2, "disk": 0.0}, abs=1e-12)
    # the wait shared by the host counters' probabilities, a group each
    culprit = {"cpu": 0.5, "memory": 0.25, "network": 0.125, "disk": 0.125}
    phi = shapley(model, run, culprit)
    assert phi == pytest.approx({"cpu": 0.2, "memory": 0.2, "network": 0.25, "disk": 0.05}, abs=1e-12)
    assert sum(phi.values()) == pytest.approx(0.7, abs=1e-12)  # efficiency


@pytest.mark.parametrize("wait, fetch, total, phi_cpu, phi_net", [
    # alone 15 and 10, together 25 clipped to 20: each gets half of its marginal with and without
    # the other (the null groups change no coalition's value): 15/2 + (20-10)/2, 10/2 + (20-15)/2
    (1500.0, 1000.0, 20.0, 12.5, 7.5),
    # the same change in both: symmetric, 10 each
    (1500.0, 1500.0, 20.0, 10.0, 10.0),
    # faster, clipped at -0.5: -0.4 and -0.3 alone: -0.4/2 + (-0.5+0.3)/2, -0.3/2 + (-0.5+0.4)/2
    (-40.0, -30.0, -0.5, -0.3, -0.2),
])
def test_shapley_of_a_clipped_estimate_is_exact_symmetric_and_sums_to_it(model, wait, fetch, total, phi_cpu, phi_net):
    run = _frame(_stage("x", 0, {"wait_ms": wait, "fetch_ms": fetch}, base_run_ms=100.0))
    assert run_estimate(model, run) == pytest.approx(total, abs=1e-9)
    phi = shapley(model, run)
    assert set(phi) == set(GROUPS)
    assert phi == pytest.approx({"cpu": phi_cpu, "memory": 0.0, "network": phi_net, "disk": 0.0}, abs=1e-9)
    assert sum(phi.values()) == pytest.approx(total, abs=1e-9)


def test_a_runs_measured_degradation_counts_only_stages_with_an_expected_time():
    rows = pd.DataFrame({"duration_ms": [300.0, 100.0, 50.0, 70.0], "expected_ms": [200.0, 100.0, np.nan, 0.0]})
    act, exp, d = run_degradation(rows)
    assert (act, exp) == (400.0, 300.0) and d == pytest.approx(1 / 3)
    act, exp, d = run_degradation(rows.iloc[2:])
    assert (act, exp) == (0.0, 0.0) and math.isnan(d)
    # an expected time under a millisecond is still one
    act, exp, d = run_degradation(pd.DataFrame({"duration_ms": [0.75], "expected_ms": [0.5]}))
    assert (act, exp) == (0.75, 0.5) and d == pytest.approx(0.5)


def test_ten_labelled_stages_train_the_model_and_nine_do_not():
    # rows without a finite label or with no expected time are not labelled stages
    # (an expected time under a millisecond is one)
    unlabelled = [dict(_stage("u0", 0), degradation=np.nan), dict(_stage("u1", 0, expected_ms=0.0), degradation=0.0)]
    ten = pd.concat([_frame(*(_stage(f"t{i}", 0, {"wait_ms": 10.0 * i}, duration_ms=1000 + 10.0 * i)
                              for i in range(9)), _stage("t9", 0, expected_ms=0.5, duration_ms=0.5)),
                     pd.DataFrame(unlabelled)], ignore_index=True)
    assert DegradationModel(culprit="none", correction=0.0, n_estimators=5).fit(ten).gbr_ is not None
    with pytest.raises(DegenerateDataError, match="only 9 labelled stages"):
        DegradationModel(culprit="none", correction=0.0, n_estimators=5).fit(ten.iloc[1:])


def test_the_training_runs_shortest_and_longest_total_stage_time_are_kept():
    df = _frame(*(_stage(f"t{i // 2}", i % 2, duration_ms=1000.0 + 100 * i) for i in range(12)))
    m = DegradationModel(culprit="none", correction=0.0, n_estimators=5).fit(df)
    # t0: 1000 + 1100; t5: 2000 + 2100
    assert m.train_run_ms_ == (2100.0, 4100.0)
    # stage rows that do not say which run they belong to: no run's total to keep
    assert DegradationModel(culprit="none", correction=0.0, n_estimators=5).fit(
        df.drop(columns="run_id")).train_run_ms_ is None


def test_a_stage_without_a_clean_counterpart_is_its_own_baseline(model):
    run = _frame(_stage("x", 0, {"wait_ms": 300.0}), _stage("x", 1, {"wait_ms": 100.0}))
    for f in FEATURES:
        run.loc[1, f"base_{f}"] = np.nan
    # stage 1 changed nothing against itself: 300 ms more over 2 s of baseline
    assert model.predict(run) == pytest.approx([0.15, 0.15], abs=1e-12)
    assert (model.baseline_features(run)[1] == run.loc[1, FEATURES].to_numpy(float)).all()
    # no baseline columns at all: every stage is its own, no change
    bare = run.drop(columns=[f"base_{f}" for f in FEATURES])
    assert model.predict(bare) == pytest.approx([0.0, 0.0], abs=1e-12)


def test_a_model_without_a_baseline_has_nothing_to_attribute():
    # baseline="none": the raw features, no clean values to set a group back to
    df = _frame(*(_stage(f"t{i}", 0, {"wait_ms": 50.0 * i}, duration_ms=1000.0 + 50 * i) for i in range(12)))
    m = DegradationModel(culprit="none", baseline="none", n_estimators=5).fit(df)
    run = df.iloc[[5]].reset_index(drop=True)
    assert (m.baseline_features(run) == run[FEATURES].to_numpy(float)).all()
    assert shapley(m, run) == {g: 0.0 for g in GROUPS}


def test_without_a_prior_or_a_baseline_the_boosting_is_the_estimate_whole():
    df = _frame(*(_stage(f"t{i}", 0, {"wait_ms": 50.0 * i}, duration_ms=1000.0 + 50 * i) for i in range(12)))
    for kw in ({"prior": "none"}, {"baseline": "none"}):
        m = DegradationModel(culprit="none", correction=0.0, n_estimators=5, **kw).fit(df)
        assert m.correction_ == 1.0
        z = df[FEATURES].to_numpy(float) if kw.get("baseline") == "none" else None
        if z is not None:  # the raw features, no log-ratios
            assert np.expm1(m.gbr_.predict(z)) == pytest.approx(m.predict(df), abs=1e-12)
        else:
            assert m.predict(df) == pytest.approx(np.expm1(m.gbr_.predict(_design_by_hand(df))), abs=1e-12)


def _design_by_hand(df):
    """docs/monitor.md: each feature's log-ratio to its clean baseline, each run-time component's
    change over the baseline's run time per task."""
    from sparkpredict.features.interference import COMPONENTS

    x = df[FEATURES].to_numpy(float)
    x0 = df[[f"base_{f}" for f in FEATURES]].to_numpy(float)
    z = np.log((np.abs(x) + 1e-2) / (np.abs(x0) + 1e-2))
    for j, f in enumerate(FEATURES):
        if f in COMPONENTS:
            z[:, j] = (x[:, j] - x0[:, j]) / np.maximum(df["base_run_ms"].to_numpy(float), 1.0)
    return z


def test_the_model_sees_log_ratios_and_the_components_change_over_the_baseline_run_time():
    from sparkpredict.models.degradation import _design

    ratio, wait = FEATURES.index("cpu_ratio"), FEATURES.index("wait_ms")
    x, x0 = np.full((2, len(FEATURES)), 0.5), np.full((2, len(FEATURES)), 0.5)
    x[:, ratio], x0[:, ratio] = [0.49, -0.49], [0.99, 0.99]  # (0.49 + 0.01) / (0.99 + 0.01), sign ignored
    x[:, wait], x0[:, wait] = [600.0, 0.75], [100.0, 0.25]
    z = _design(x, x0, np.array([500.0, 0.5]))
    assert z[:, ratio] == pytest.approx([math.log(0.5)] * 2, abs=1e-12)
    # 500 ms more over a 500 ms baseline; 0.5 ms more over one under a ms, counted as 1 ms
    assert z[:, wait] == pytest.approx([1.0, 0.5], abs=1e-12)
    assert np.count_nonzero(z) == 4  # the unchanged features are 0
    assert _design(x, None) is x  # no baseline: the raw features


def test_one_training_job_keeps_the_full_correction_and_two_choose_it_by_held_out_error():
    rng = np.random.default_rng(1)
    # the measured slowdown is 1.5x the waits' change: the prior alone errs by half of it
    rows = [_stage(f"t{i}", 0, {"wait_ms": w}, duration_ms=1000.0 + 1.5 * w) for i, w in enumerate(rng.uniform(0, 400, 24))]
    df = _frame(*rows).assign(job=["a"] * 12 + ["b"] * 12)
    one = DegradationModel(culprit="none", n_estimators=5).fit(df.assign(job="a"))
    assert one.correction_ == 1.0 and one.correction_cv_ == {}
    two = DegradationModel(culprit="none", n_estimators=5).fit(df)
    cv = two.correction_cv_
    assert set(cv) == {0.0, 0.25, 0.5, 1.0} and two.correction_ == min(cv, key=cv.get)
    # weight 0 is the prior alone, whatever the held-out fits learnt: its error is known
    waits = df["wait_ms"].to_numpy() - BASE["wait_ms"]
    assert cv[0.0] == pytest.approx(np.mean(0.5 * waits / 1000), rel=1e-9)
    # weight 1: each job's runs estimated by a model fitted on the other job's runs only
    errors = []
    for held, other in (("a", "b"), ("b", "a")):
        sub = DegradationModel(culprit="none", n_estimators=5, correction=1.0).fit(df[df["job"] == other])
        for _, run in df[df["job"] == held].groupby("run_id", sort=False):
            run = run.reset_index(drop=True)
            errors.append(abs(run_estimate(sub, run) - run_degradation(run)[2]))
    assert cv[1.0] == pytest.approx(np.mean(errors), rel=1e-9)


def _culprit_runs(n_runs, relabel=None):
    from tests.test_monitor import _waiting_runs

    df = _waiting_runs(n_runs=n_runs)
    if relabel:
        df["label"] = df["label"].str.replace(*relabel, regex=False)
    return df


def test_the_culprit_model_needs_eight_interfered_runs_of_two_kinds():
    kw = {"n_estimators": 5, "correction": 0.0}
    # 12 runs: 4 clean, 4 cpu, 4 network; 11 runs: one network run fewer
    assert DegradationModel(**kw).fit(_culprit_runs(12)).culprit_ is not None
    assert DegradationModel(**kw).fit(_culprit_runs(11)).culprit_ is None
    assert DegradationModel(**kw).fit(_culprit_runs(12, relabel=("network", "cpu"))).culprit_ is None
    # host3 counts a memory neighbour as a compute one: one kind left
    memory = _culprit_runs(12, relabel=("network", "memory"))
    assert list(DegradationModel(**kw).fit(memory).culprit_.classes_) == ["cpu", "memory"]
    assert DegradationModel(culprit="host3", **kw).fit(memory).culprit_ is None


def test_the_culprits_probabilities_cover_every_group_those_never_seen_at_zero():
    m = DegradationModel(n_estimators=5, correction=0.0).fit(_culprit_runs(12))
    run = _culprit_runs(12).query("run_id == 'r2'").reset_index(drop=True)
    p = m.host_culprit(run)
    assert list(p) == list(GROUPS) and p["memory"] == p["disk"] == 0.0
    assert p["network"] > p["cpu"] and sum(p.values()) == pytest.approx(1.0)
    assert m.culprit_probabilities(run) == p


# --- regime.newest_shift: has the job changed (docs/advice.md, "A job that changed") ---------

def _history(n_old=30, k=0, factor=1.0, seed=0, noise=0.04):
    """tests/test_regime_change.history with the runtimes' noise given."""
    from tests.test_regime_change import history, law

    h = history(n_old, k, factor, seed)
    rng = np.random.default_rng(seed + 100)
    size_gb, e = h["input_bytes"] / 1e9, h["executors_requested"]
    f = np.where(np.arange(len(h)) >= n_old, factor, 1.0)
    h["wall_ms"] = (law(size_gb, e) * np.exp(noise * rng.standard_normal(len(h))) * f * 1000).astype(int)
    return h


def _shift(h, **kw):
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_job

    return fit_job(runs_table(h), **kw).recent_shift_


@pytest.mark.parametrize("n_old, k, earlier", [
    (10, 3, 10),   # 13 runs: the newest 3 leave exactly the 10 earlier runs needed
    (30, 4, 23),   # 34: the newest third (11) is set aside
    (96, 4, 70),   # 100: at most 30 are
])
def test_the_earlier_runs_are_all_but_the_newest_third_at_most_30_leaving_at_least_10(n_old, k, earlier):
    shift = _shift(_history(n_old, k, 1.6, seed=0 if n_old == 10 else 1))
    assert shift["runs"] == k and shift["earlier_runs"] == earlier
    assert shift["run_ids"] == [f"app-etl-{i:03d}" for i in range(n_old, n_old + k)]


def test_twelve_runs_are_too_few_to_judge():
    # 9 earlier runs would be fewer than 10; 13 runs are judged (above)
    assert _shift(_history(9, 3, 1.6)) is None


def test_runs_beyond_the_interval_but_off_by_less_than_the_minimum_ratio_are_no_change():
    # 1 % noise: a 12 % change lies beyond the earlier runs' 80 % interval, yet is no regime;
    # 20 % is one (the minimum is 1.15x, either way)
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_job

    for seed in (0, 1):
        h = runs_table(_history(k=4, factor=1.12, seed=seed, noise=0.01)).sort_values("start_ms")
        before = fit_job(h.iloc[:23])
        p = before.predict_interval(h.iloc[-4:], 0.8)
        y = h["runtime_s"].to_numpy()[-4:]
        assert (y > p["upper_s"]).all() and (y / p["predicted_runtime_s"] < 1.15).all()
        assert _shift(_history(k=4, factor=1.12, seed=seed, noise=0.01)) is None
        assert _shift(_history(k=4, factor=0.9, seed=seed, noise=0.01)) is None
        slower = _shift(_history(k=4, factor=1.2, seed=seed, noise=0.01))
        assert slower["runs"] == 4 and 1.15 < slower["ratio"] < 1.25
        faster = _shift(_history(k=4, factor=1 / 1.2, seed=seed, noise=0.01))
        assert faster["runs"] == 4 and 1 / 1.25 < faster["ratio"] < 1 / 1.15


def test_the_best_equation_looks_first_at_its_50_percent_interval_then_the_jobs_own_kind_at_80(monkeypatch):
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.analytical import EQUATIONS
    from sparkpredict.models.hybrid import JobRuntimeModel
    from sparkpredict.models.persist import fit_job

    asked = []
    real = JobRuntimeModel.predict_interval

    def spy(self, X, confidence=0.9):
        if not self._check_shift:  # the models of the earlier runs only
            asked.append((self.kind, confidence))
        return real(self, X, confidence)

    monkeypatch.setattr(JobRuntimeModel, "predict_interval", spy)

    def best_equation(m):
        eqs = {k: v for k, v in m.candidates_.items() if k in EQUATIONS}
        return min(eqs, key=eqs.get)

    m = fit_job(runs_table(_history(n_old=34, seed=0)))
    assert m.recent_shift_ is None and m.kind == "auto"
    # no change: the equation alone looked, the job's kind was never fitted
    assert asked == [(best_equation(m), 0.5)]
    asked.clear()
    m = fit_job(runs_table(_history(k=4, factor=1.6, seed=1)))
    assert asked == [(best_equation(m), 0.5), ("auto", 0.8)] and m.recent_shift_["level"] == 0.8


@pytest.mark.parametrize("kind", ["amdahl", "gbm"])
def test_a_model_of_an_equation_or_of_no_equation_is_judged_by_its_own_kind(kind):
    # amdahl: the best equation is the job's own kind, so no first look; gbm: no equation scored
    shift = _shift(_history(k=4, factor=1.6, seed=1), kind=kind)
    assert shift["runs"] == 4 and shift["run_ids"] == [f"app-etl-{i:03d}" for i in range(30, 34)]


def test_newest_runs_all_beyond_the_earlier_runs_sizes_are_passed_over():
    # the newest third of the runs read 160 GB, twice the earlier runs' largest input: none of
    # them can be judged, and 1.6x slower says nothing
    from tests.test_regime_change import GB, law

    h = _history(n_old=36)
    new = h.index[-12:]
    e = h.loc[new, "executors_requested"]
    h.loc[new, "input_bytes"] = 160 * GB
    h.loc[new, "wall_ms"] = (law(160, e) * 1.6 * 1000).astype(int)
    assert _shift(h) is None


def test_a_runs_table_given_as_a_mapping_of_columns_is_judged_as_the_frame():
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_job

    table = runs_table(_history(k=4, factor=1.6, seed=1))
    columns = {c: table[c].to_numpy() for c in table.columns}
    shift = fit_job(table).recent_shift_
    assert shift is not None and fit_job(columns).recent_shift_ == shift
