"""The slowdown monitor's estimator, fourth pass: the points of degradation.py that the third
pass (tests/test_mutation_gaps_degradation3.py) never ran and that the earlier files left alive.
Each test here failed on a one-operator change of degradation.py. No JVM: known frames.
"""
from __future__ import annotations

import numpy as np
from test_mutation_gaps_degradation import _frame, _stage

from sparkpredict.models.degradation import DegradationModel


def test_with_no_held_out_run_measurable_the_correction_stays_whole():
    """Two jobs, but no run's stage time is finite, so no held-out run has a measured ``D`` to
    score a weight against: the correction is 1.0 and no weight has an error. Mutants: that
    fallback ``return 1.0`` -> 1.5 (a weight outside :data:`CORRECTION_WEIGHTS`), or deleted (a
    ValueError from ``min`` of no errors)."""
    rng = np.random.default_rng(1)
    rows = [_stage(f"t{i}", 0, {"wait_ms": w}, duration_ms=np.inf) for i, w in enumerate(rng.uniform(0, 400, 24))]
    # the label the model learns from is given; only the measured stage time is unusable
    df = _frame(*rows).assign(job=["a"] * 12 + ["b"] * 12, degradation=0.1)
    m = DegradationModel(culprit="none", n_estimators=5).fit(df)
    assert m.correction_cv_ == {}
    assert m.correction_ == 1.0
