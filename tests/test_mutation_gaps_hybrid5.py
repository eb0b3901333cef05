"""The whole-job model (models/hybrid.py) at the points a fifth mutation audit found no test
pinning: three mutants of the last 101 of its 500 one-operator mutants, and three that the
earlier passes left alive. Each test here failed on a mutant that the JVM-free tests of the
module let pass. Runs follow a known law (``_exact_runs``, ``law_model``), so expected values
are worked out by hand; no JVM, no timings.
"""
from __future__ import annotations

import numpy as np
from test_mutation_gaps_hybrid4 import count_curve_calls
from test_mutation_gaps_intervals import GIB, _exact_runs, law_model

from sparkpredict.models.hybrid import JobRuntimeModel

# ---- the runs a fit reads (_training_columns) --------------------------------------------------


def test_a_column_without_one_finite_value_leaves_the_fit_as_without_it():
    """A numeric column no run recorded a finite value of (+-inf here) is no input: the fit is
    the one of the runs without it, down to the order of the rows its folds are cut from
    (mutant: the column left among the columns the rows are sorted by, ahead of the runtime:
    other random folds, other out-of-fold errors, another interval at a recorded size)."""
    rng = np.random.default_rng(3)
    runs = _exact_runs()
    runs = runs.loc[runs.index.repeat(2)].reset_index(drop=True)
    runs["runtime_s"] *= rng.uniform(0.9, 1.1, len(runs))
    without = JobRuntimeModel(kind="amdahl").fit(runs)
    unrecorded = runs.assign(a=np.where(np.arange(len(runs)) % 3 == 0, np.inf, -np.inf))
    m = JobRuntimeModel(kind="amdahl").fit(unrecorded)
    assert m.extras_ == [] and "a" not in m.feature_names_
    # the random folds' errors (the mutant's differed by up to 0.017 in log, its 90 % upper
    # bound at 2 GiB on 4 executors 21.95 s for 21.80 s)
    np.testing.assert_array_equal(m.seen_residuals_, without.seen_residuals_)
    at = {"input_bytes": [2 * GIB], "executors": [4.0]}
    assert m.predict_interval(at)["upper_s"].tolist() == without.predict_interval(at)["upper_s"].tolist()


# ---- a model fitted again (_fit) -------------------------------------------------------------

def test_a_model_fitted_again_forgets_the_pooled_shares_of_its_earlier_fit():
    """Refit on other runs, the model pools the share that grows from its new curve, as a new
    model would (mutant: the cache of the earlier fit kept, its shares read back). At 16 GiB
    (4x the largest size), 4 executors: ``10 + 20·S/E`` is 30 s at 4 GiB, of which 20 grow,
    so 30 + 20·3 = 90 s (median pooled share 2/3 of the counts 2, 4, 8: 30·(1 + 2/3·3) = 90);
    the share of the earlier fit, ``20·S/E`` (all of it grows), made it 30·4 = 120 s."""
    beyond = {"input_bytes": [16 * GIB], "executors": [4.0]}
    m = JobRuntimeModel().fit(_exact_runs(law=lambda S, E: 20 * S / E))
    m.predict(beyond)
    m.fit(_exact_runs())
    again = m.predict(beyond)
    np.testing.assert_allclose(again, [90.0], rtol=1e-6)
    np.testing.assert_array_equal(again, JobRuntimeModel().fit(_exact_runs()).predict(beyond))


# ---- at the edges of the training range (left by the earlier passes) ----------------------------

def test_a_question_at_the_largest_size_is_no_question_beyond_it(monkeypatch):
    """At exactly the largest size the prediction is the curve's, read once, and no pooled share
    is worked out or kept (mutants: ``>`` read as ``>=`` in ``_capped`` or in
    ``capped_beyond_sizes``, the share of a growth of nothing computed, the curve read again)."""
    m = law_model()
    calls = count_curve_calls(monkeypatch, m)
    np.testing.assert_allclose(m.predict({"input_bytes": [4 * GIB], "executors": [4.0]}), [20.0 * 4 / 4 + 10.0])
    assert calls == [1]
    assert getattr(m, "_share_cache", {}) == {}


def test_an_extra_column_asked_at_its_smallest_value_lies_inside_the_range_even_at_or_below_zero():
    """Asked at the smallest value the runs had, 0 or negative, a question lies 0 beyond the
    range (mutant: ``v <= lo`` read as below it, ``lo / v`` of no positive ``v``: infinitely
    far)."""
    gib = {"input_bytes": [GIB, 4 * GIB], "executors": [2.0, 8.0]}
    for lo in (0.0, -2.0):
        m = law_model(extras=["p"], defaults={"p": lo}, training_range={**gib, "p": [lo, 1.0]})
        got = m.extrapolation({"input_bytes": [2 * GIB], "executors": [4.0], "p": [lo]})
        assert (got["p"].tolist(), got["max"].tolist()) == ([0.0], [0.0])
