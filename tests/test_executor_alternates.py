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
    bare = dict(m.to_dict(), executor_alternates=[], below_counts="none")
    alone = JobRuntimeModel.from_dict(bare).predict_interval(q, 0.9)
    # and around its curve's prediction (no weak-scaling hedge below the counts)
    curve = JobRuntimeModel.from_dict(dict(bare, below_counts_prediction="none")).predict_interval(q, 0.9)
    # gustafson chosen; the alternates' slower single executor (amdahl's, the truth's) lifts the top
    assert iv["upper_s"][0] > 1.2 * curve["upper_s"][0] and iv["lower_s"][0] <= alone["lower_s"][0]
    assert iv["upper_s"][1] == alone["upper_s"][1] == curve["upper_s"][1]  # 4 executors were recorded
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


def test_beyond_the_counts_the_chance_grows_with_the_limit_across_the_equations_spread(amdahl_models):
    """The spread enters at a share c of itself at confidence c: a whole spread at every level
    made an interval of confidence ~0 as wide as the spread, and the stated chance ~49 % for
    every limit inside it (a count predicted at 5m51s as likely to make 3 minutes as one at
    8m51s)."""
    m = next(m for m in amdahl_models if m.predict_interval(_query([32.0]), 0.9)["upper_s"][0]
             > 1.3 * m.predict(_query([32.0]))[0])
    row = _query([32.0])
    pred = float(m.predict(row)[0])
    iv = m.predict_interval(row, 0.9)
    narrow = m.predict_interval(row, 0.01)
    assert narrow["upper_s"][0] - narrow["lower_s"][0] < 0.2 * (iv["upper_s"][0] - iv["lower_s"][0])
    limits = np.linspace(float(iv["lower_s"][0]), float(iv["upper_s"][0]), 25)
    chance = np.array([m.chance_within(row, lim)[0] for lim in limits])
    assert np.all(np.diff(chance) >= -1e-9) and chance[-1] - chance[0] > 0.8
    assert np.all(chance[limits < 0.97 * pred] < 0.5) and np.all(chance[limits > 1.03 * pred] > 0.5)
    # not a plateau: a limit halfway up the band is clearly likelier than one just above the prediction
    mid = 0.5 * (pred + float(iv["upper_s"][0]))
    assert m.chance_within(row, mid)[0] > m.chance_within(row, 1.01 * pred)[0] + 0.2


def test_no_count_predicted_within_the_deadline_gives_the_fastest_by_the_upper_bound(amdahl_models):
    import sparkpredict

    m = amdahl_models[0]
    counts = [2, 4, 8, 16, 32, 64]
    q = _query(np.array(counts, float))
    iv = m.predict_interval(q, 0.9)
    deadline = 0.5 * float(np.min(iv["predicted_runtime_s"]))  # below every prediction
    a = sparkpredict.suggest_executors("j", 4 * GIB, deadline_s=deadline, executor_counts=counts,
                                       models={"j": m})
    assert a.meets_deadline is False
    assert a.executors == counts[int(np.argmin(iv["upper_s"]))]
    assert any("none is even predicted within it or likelier to make it than not, so the fastest by that upper bound is given" in w
               for w in a.warnings)
    # a deadline some count is predicted within: the likeliest count, as before
    reach = float(np.sort(iv["predicted_runtime_s"])[0]) * 1.05
    b = sparkpredict.suggest_executors("j", 4 * GIB, deadline_s=reach, executor_counts=counts,
                                       models={"j": m})
    assert b.meets_deadline is False
    chances = [c.chance_meets_deadline for c in b.candidates]
    assert b.executors == counts[int(np.argmax(np.round(chances, 4)))]
    assert any("the count most likely to make it is given" in w for w in b.warnings)
