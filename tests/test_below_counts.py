"""Asked for fewer executors than any run had, the upper bound is at least perfect scaling from
the fewest recorded count (hybrid.BELOW_COUNTS): halving the nodes can slow a run almost 2x
(spilling), more than any equation fitted to the runs above says."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from grid_models import GIB, fitted, grid_runs, saved_without

from sparkpredict.models.hybrid import JobRuntimeModel

SIZES = (1, 2, 4, 8)
COUNTS = (4, 8, 16)


def truth(S, E):
    """Amdahl from 4 executors up (a serial part as large as the parallel work at 4 executors
    and 4 GiB); below 4 the work spills and the run scales almost perfectly from 4's runtime."""
    E = np.asarray(E, float)
    amdahl = 30 + 20 * S / E
    at4 = 30 + 20 * S / 4
    return np.where(E >= 4, amdahl, at4 * (4 / E) ** 0.9)


def _runs(seed: int) -> pd.DataFrame:
    return grid_runs(truth, SIZES, COUNTS, seed, noise=0.03)


def _query(counts, size=4.0) -> dict[str, np.ndarray]:
    return {"input_bytes": np.full(len(counts), size * GIB), "executors": np.asarray(counts, float)}


def _before(m: JobRuntimeModel) -> JobRuntimeModel:
    """The same fitted model as a file saved before the rule (no "below_counts") loads."""
    return saved_without(m, "below_counts")


@pytest.fixture(scope="module")
def models() -> list[JobRuntimeModel]:
    return fitted(_runs)


def test_the_truth_at_fewer_executors_than_any_run_lies_inside_the_interval(models):
    E = np.array([1.0, 2.0])
    for size in (2.0, 4.0, 6.0):
        q, t = _query(E, size), truth(size, E)
        for m in models:
            assert m.below_counts_ == "perfect_scaling"
            iv = m.predict_interval(q, 0.9)
            assert np.all((iv["lower_s"] <= t) & (t <= iv["upper_s"])), (m.name_, size, iv, t)
            # without the floor every equation's speed-up, the near-equal ones' included, put it
            # above the upper bound: the equations cannot slow a run that much
            old = _before(m).predict_interval(q, 0.9)
            assert np.all(t > old["upper_s"]), (m.name_, size, old, t)
            np.testing.assert_array_equal(old["predicted_runtime_s"], iv["predicted_runtime_s"])
            np.testing.assert_array_equal(old["lower_s"], iv["lower_s"])


def test_the_upper_bound_is_perfect_scaling_from_the_fewest_count(models):
    for m in models:
        iv = m.predict_interval(_query([1.0, 2.0, 4.0]), 0.9)
        np.testing.assert_allclose(iv["upper_s"][:2], iv["upper_s"][2] * np.array([4.0, 2.0]), rtol=1e-9)
        # and a deadline at that bound is met with the interval's chance
        chance = m.chance_within(_query([2.0]), float(iv["upper_s"][1]) * 1.001)
        assert chance[0] >= 0.95 - 1e-3


def test_at_and_above_the_counts_nothing_changes(models):
    q = _query([4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 64.0])
    for m in models:
        old = _before(m)
        assert old.below_counts_ == "none"
        for c in (0.5, 0.9):
            a, b = m.predict_interval(q, c), old.predict_interval(q, c)
            for k in ("predicted_runtime_s", "lower_s", "upper_s"):
                np.testing.assert_array_equal(a[k], b[k])


def test_single_kinds_keep_their_interval():
    m = JobRuntimeModel(kind="amdahl").fit(_runs(0))
    assert m.below_counts_ == "none"
    assert JobRuntimeModel.from_dict(m.to_dict()).below_counts_ == "none"
