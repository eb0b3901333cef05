"""Beyond the executor counts the runs had, the interval spans the equations the runs could not
tell apart (selection.NEAR_EQUAL), not the chosen one's extrapolation alone."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from sparkpredict.models.hybrid import JobRuntimeModel

GIB = 2**30
SIZES = (1, 2, 4, 8)
COUNTS = np.array([4.0, 8.0, 16.0, 32.0])


def _runs(seed: int, runtime, counts=(1, 2, 4)) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [{"job": "j", "input_bytes": S * GIB, "executors": E,
             "runtime_s": runtime(S, E) * rng.lognormal(0, 0.05)}
            for S in SIZES for E in counts for _ in range(3)]
    return pd.DataFrame(rows)


def amdahl(S, E):
    return 5 + 30 * S / E  # no serial part beyond the fixed cost: more executors always help


def all_to_all(S, E):
    return 5 + 30 * S / E + S * E * (E - 1) / 2  # communication that grows with E squared


def _query(counts=COUNTS) -> dict[str, np.ndarray]:
    return {"input_bytes": np.full(len(counts), 4.0 * GIB), "executors": np.asarray(counts, float)}


@pytest.fixture(scope="module")
def amdahl_models() -> list[JobRuntimeModel]:
    return [JobRuntimeModel().fit(_runs(seed, amdahl)) for seed in range(6)]


def test_the_truth_beyond_the_counts_lies_inside_the_interval_whichever_equation_was_chosen(amdahl_models):
    q = _query()
    truth = amdahl(4, COUNTS)
    missed_alone = 0
    for m in amdahl_models:
        assert len(m.executor_alternates_) >= 2, m.candidates_
        iv = m.predict_interval(q, 0.9)
        assert np.all((iv["lower_s"] <= truth) & (truth <= iv["upper_s"])), (m.name_, iv, truth)
        alone = JobRuntimeModel.from_dict(dict(m.to_dict(), executor_alternates=[]))
        a = alone.predict_interval(q, 0.9)
        np.testing.assert_allclose(a["predicted_runtime_s"], iv["predicted_runtime_s"])
        missed_alone += int(np.any(truth < a["lower_s"]))
    # the chosen equation's own interval put the truth below its lower bound in some seeds:
    # what the alternates are for (fully_connected_c1 predicted 16 executors slower than 8)
    assert missed_alone >= 1


def test_inside_the_counts_the_alternates_change_nothing(amdahl_models):
    q = _query(np.array([1.0, 2.0, 3.0, 4.0]))
    for m in amdahl_models:
        alone = JobRuntimeModel.from_dict(dict(m.to_dict(), executor_alternates=[]))
        for c in (0.5, 0.9):
            a, b = m.predict_interval(q, c), alone.predict_interval(q, c)
            for k in ("lower_s", "upper_s"):
                np.testing.assert_array_equal(a[k], b[k])


def test_fewer_executors_than_any_run_widen_too():
    m = JobRuntimeModel().fit(_runs(2, amdahl, counts=(4, 6, 8)))
    q = _query(np.array([1.0, 4.0]))
    iv = m.predict_interval(q, 0.9)
    # the chosen model's interval alone: no alternates, no perfect-scaling floor below the counts
    alone = JobRuntimeModel.from_dict(dict(m.to_dict(), executor_alternates=[], below_counts="none")
                                      ).predict_interval(q, 0.9)
    # gustafson chosen; the alternates' slower single executor (amdahl's, the truth's) lifts the top
    assert iv["upper_s"][0] > 1.2 * alone["upper_s"][0] and iv["lower_s"][0] <= alone["lower_s"][0]
    assert iv["upper_s"][1] == alone["upper_s"][1]  # 4 executors were recorded
    truth = amdahl(4, 1.0)
    assert iv["lower_s"][0] <= truth <= iv["upper_s"][0], (iv, truth)


def test_runs_that_show_the_slowdown_keep_equations_without_one_out():
    for seed in range(3):
        m = JobRuntimeModel().fit(_runs(seed, all_to_all, counts=(1, 2, 3, 4)))
        names = {e.name for e in m.executor_alternates_}
        # Amdahl and Gustafson cannot slow down with more executors: the runs rule them out
        assert names and not names & {"amdahl", "gustafson"}, (names, m.candidates_)
        iv = m.predict_interval(_query(), 0.9)
        truth = all_to_all(4, COUNTS)
        assert np.all((iv["lower_s"] <= truth) & (truth <= iv["upper_s"])), (iv, truth)
        # still clearly slower at 16 than the recorded 4: the interval does not fall back to "unknown"
        assert iv["lower_s"][2] > iv["upper_s"][0]


def test_the_alternates_are_saved_and_the_stated_chance_reads_the_same_interval(amdahl_models):
    m = amdahl_models[0]
    d = json.loads(json.dumps(m.to_dict(), allow_nan=False))
    assert [e["name"] for e in d["executor_alternates"]] == [e.name for e in m.executor_alternates_]
    back = JobRuntimeModel.from_dict(d)
    q = _query()
    a, b = m.predict_interval(q, 0.8), back.predict_interval(q, 0.8)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    # chance_within(X, t) >= (1 + c) / 2 exactly where the upper bound at c is within t, beyond
    # the counts as inside them
    for i in range(len(COUNTS)):
        row = {k: v[i:i + 1] for k, v in q.items()}
        upper = float(a["upper_s"][i])
        assert back.chance_within(row, upper * (1 + 1e-9))[0] >= 0.9 - 1e-4, i
        assert back.chance_within(row, upper * (1 - 1e-3))[0] < 0.9, i


def test_a_model_saved_before_the_alternates_loads_without_them(amdahl_models):
    d = amdahl_models[0].to_dict()
    del d["executor_alternates"]
    old = JobRuntimeModel.from_dict(d)
    assert old.executor_alternates_ == []
    assert np.all(np.isfinite(old.predict_interval(_query(), 0.9)["upper_s"]))


def test_single_kinds_keep_their_own_interval():
    m = JobRuntimeModel(kind="fully_connected_c1").fit(_runs(0, amdahl))
    assert m.executor_alternates_ == []
