"""The whole-job model (models/hybrid.py) and the one fitting function of both retrain paths
(fitting.py), at the points a second mutation audit found no test pinning: its load checks of a
damaged model file (``_floats``, ``_finite``) first, then a seeded shuffle of every other
one-operator change of the two modules, as many as the time allowed. Each test here failed on a
mutant the rest of the JVM-free suite let pass. Models with a known law come from ``law_model``
(an equation with set parameters), so expected values are worked out by hand; no JVM, no timings.
"""
from __future__ import annotations

import pytest
from test_mutation_gaps_intervals import law_model

# ---- load checks of a damaged model file (_floats, _finite) ----------------------------------


@pytest.mark.parametrize("field", ["residuals", "seen_residuals", "size_levels", "executor_levels"])
def test_one_null_among_a_saved_list_of_numbers_is_refused_at_load(field):
    """One null item is enough: the first of four was NaN, so the interval's quantiles (or the
    sizes the interval calls recorded) were NaN, not just those of a list of nulls."""
    with pytest.raises(ValueError, match=f"^{field} holds a null or NaN$"):
        law_model(**{field: [None, 0.0, 0.05, 0.1]})
    law_model(**{field: [0.0, 0.0, 0.05, 0.1]})  # the same list, all numbers, loads
