"""The whole-job model (models/hybrid.py) at the points a third mutation audit found no test
pinning: each test here failed on a one-operator change of the module that the rest of the
JVM-free suite let pass. Models with a known law come from ``law_model`` (an equation with set
parameters), so expected values are worked out by hand; no JVM, no timings.
"""
from __future__ import annotations

import numpy as np
import pytest

from sparkpredict.errors import NotFittedError
from sparkpredict.models.hybrid import JobRuntimeModel

X1 = {"input_bytes": [2.0**30], "executors": [2.0]}

# ---- an unfitted model ------------------------------------------------------------------------


@pytest.mark.parametrize("use", [
    lambda m: m.predict(X1), lambda m: m.predict_interval(X1), lambda m: m.chance_within(X1, 60.0),
    lambda m: m.at_seen_size(X1), lambda m: m.to_dict(), lambda m: m.extrapolation(X1),
    lambda m: m.flat_beyond_sizes(X1), lambda m: m.interval_errors(), lambda m: m.max_confidence()],
    ids=["predict", "predict_interval", "chance_within", "at_seen_size", "to_dict", "extrapolation",
         "flat_beyond_sizes", "interval_errors", "max_confidence"])
def test_every_use_of_an_unfitted_model_says_to_fit_it_first(use):
    """Each public method asks for a fitted model first (mutant: its ``self._check()`` dropped):
    without it ``to_dict`` and ``at_seen_size`` died with an AttributeError naming a private field."""
    with pytest.raises(NotFittedError) as got:
        use(JobRuntimeModel())
    assert (got.value.message, got.value.fix) == ("the model is not fitted", "call fit(runs) or load a saved model")


# ---- the share of the runtime that grows, pooled over the counts (_pooled_share) ---------------

def test_the_pooled_share_of_a_question_with_no_other_columns_is_the_median_over_the_counts():
    """A question of size and executors alone (no resource column) is one group of other
    columns (mutant: that group made of no rows, an IndexError). ``1 + 3·(S - 1)/E`` at the
    largest size 5 grows by 12 of 13 s at 1 executor, 6 of 7 at 2, 3 of 4 at 4: median 6/7,
    whatever count the question asks."""

    from sparkpredict.models.hybrid import _pooled_share

    def curve(G):
        return 1 + 3 * (G["input_bytes"] - 1) / G["executors"]

    F = {"input_bytes": np.array([10.0, 20.0]), "executors": np.array([8.0, 1.0])}
    np.testing.assert_allclose(_pooled_share(curve, F, 5.0, np.array([4.0, 1.0, 2.0])), [6 / 7, 6 / 7], rtol=1e-12)


# ---- how many errors the interval stands on (interval_errors) ----------------------------------

def test_the_interval_stands_on_the_fewer_of_its_two_samples_of_errors():
    """19 errors at unseen sizes and 9 at recorded ones: the interval at a recorded size reads 9,
    which support 80 % at most (mutant: the larger sample's 19, 90 %), and a deadline met by any
    error is met with chance at most 9/10, not 19/20."""
    from test_mutation_gaps_intervals import law_model, q

    m = law_model(seen_residuals=list(np.linspace(-0.05, 0.05, 9)))
    assert m.interval_errors() == 9
    assert m.max_confidence() == pytest.approx(0.8, rel=1e-12)
    assert m.chance_within(q([2.0], [2.0]), 1e6).tolist() == [pytest.approx(0.9, rel=1e-12)]
    assert law_model().interval_errors() == 19  # no recorded-size errors kept: the one sample


# ---- the model of the earlier runs (fit_part) -------------------------------------------------

def test_the_model_of_a_jobs_earlier_runs_looks_for_no_change_of_its_own(monkeypatch):
    """A fit of 30 runs with start times looks once for a change of regime among its newest
    runs; the model of its 20 earlier runs that the look fits does not look again among its own
    (mutant: ``_check_shift`` left True there, a second, nested look per fit)."""
    from test_mutation_gaps_intervals import _exact_runs

    from sparkpredict.models import regime

    looks = []
    real = regime.newest_shift

    def counted(*a, **k):
        looks.append(len(a[2]))  # the training rows of the model that looks
        return real(*a, **k)

    monkeypatch.setattr(regime, "newest_shift", counted)
    runs = _exact_runs(sizes=(1, 2, 3, 4, 5, 6), counts=(2, 4, 8, 16, 32))
    m = JobRuntimeModel(kind="amdahl").fit(runs.assign(start_ms=np.arange(len(runs)) * 1000))
    assert looks == [30] and m.recent_shift_ is None
