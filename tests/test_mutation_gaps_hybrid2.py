"""The whole-job model (models/hybrid.py) and the one fitting function of both retrain paths
(fitting.py), at the points a second mutation audit found no test pinning: its load checks of a
damaged model file (``_floats``, ``_finite``) first, then a seeded shuffle of every other
one-operator change of the two modules, as many as the time allowed. Each test here failed on a
mutant the rest of the JVM-free suite let pass. Models with a known law come from ``law_model``
(an equation with set parameters), so expected values are worked out by hand; no JVM, no timings.
"""
from __future__ import annotations

import pytest
from test_mutation_gaps_hybrid import _raw
from test_mutation_gaps_intervals import law_model, q

# ---- load checks of a damaged model file (_floats, _finite) ----------------------------------


@pytest.mark.parametrize("field", ["residuals", "seen_residuals", "size_levels", "executor_levels"])
def test_one_null_among_a_saved_list_of_numbers_is_refused_at_load(field):
    """One null item is enough: the first of four was NaN, so the interval's quantiles (or the
    sizes the interval calls recorded) were NaN, not just those of a list of nulls."""
    with pytest.raises(ValueError, match=f"^{field} holds a null or NaN$"):
        law_model(**{field: [None, 0.0, 0.05, 0.1]})
    law_model(**{field: [0.0, 0.0, 0.05, 0.1]})  # the same list, all numbers, loads


# ---- growth beyond the sizes (SIZE_GROWTH "linear_pooled") -----------------------------------

def test_a_sub_second_job_pools_the_share_that_grows_as_a_longer_one_does():
    """The pooled share is read at every runtime above zero, not from one second up: 0.1 + 0.2·S/E
    (S in GiB) over 1-4 GiB at 2 and 8 executors grows by 0.4 of 0.5 s at 2 (share 0.8) and 0.1 of
    0.2 s at 8 (0.5), median 0.65; at 8 GiB and 8 executors the curve's own 0.3 s is below the
    pooled 0.2·(1 + 0.65·(8/4 - 1)) = 0.33 s. A share read as none below one second predicted
    0.3 s, and every count of a sub-second job grew only by its own curve."""
    m = law_model(theta=(0.2, 0.0, 0.1))
    assert m.predict(q([4.0, 4.0], [2.0, 8.0])) == pytest.approx([0.5, 0.2], rel=1e-6)
    assert m.predict(q([8.0, 8.0], [2.0, 8.0])) == pytest.approx([0.9, 0.33], rel=1e-6)


# ---- the fit --------------------------------------------------------------------------------

def test_random_state_none_draws_a_fresh_seed_for_each_fit(monkeypatch):
    """``random_state=None`` is scikit-learn's "a fresh seed per fit": the seed every candidate is
    scored with is drawn from [0, 2**31), so two fits get two seeds (the same one with chance
    2**-31). A range of one drew seed 0 every time, a fixed seed by another name."""
    from sparkpredict.models import selection
    from sparkpredict.models.hybrid import JobRuntimeModel

    seeds = []

    def recorded(*a, random_state, **k):
        seeds.append(random_state)
        raise RuntimeError("seed recorded")

    monkeypatch.setattr(selection, "select", recorded)
    runs = _raw().assign(runtime_s=lambda d: d["wall_ms"] / 1000, executors=lambda d: d["executors_requested"])
    for _ in range(2):
        with pytest.raises(RuntimeError, match="seed recorded"):
            JobRuntimeModel(random_state=None).fit(runs)
    assert len(seeds) == 2 and all(0 <= s < 2**31 for s in seeds)
    assert seeds[0] != seeds[1]
