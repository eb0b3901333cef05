"""The slowdown monitor's estimator, third pass: the points of degradation.py that the first two
passes (tests/test_mutation_gaps_degradation.py, tests/test_mutation_gaps_degradation2.py) left
alive or never ran. Each test here failed on a one-operator change of degradation.py. No JVM:
known frames.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from test_mutation_gaps_degradation import _frame, _stage

from sparkpredict.errors import NotFittedError
from sparkpredict.features.interference import HOST_FEATURES
from sparkpredict.models.degradation import CULPRIT_EVIDENCE, DegradationModel

KW = {"culprit": "none", "correction": 0.0, "n_estimators": 5}


def _train(n_runs=12):
    return _frame(*(_stage(f"t{i}", 0, {"wait_ms": 40.0 * i}, duration_ms=1000.0 + 40.0 * i) for i in range(n_runs)))


def test_an_unfitted_model_refuses_to_estimate_and_names_the_fix():
    """Mutant: predict's not-fitted check deleted (an AttributeError on the missing boosting)."""
    with pytest.raises(NotFittedError) as e:
        DegradationModel(**KW).predict(_train())
    assert (e.value.message, e.value.fix) == ("the degradation model is not fitted", "call fit() first")


def test_a_fitted_models_repr_shows_its_settings_not_what_it_learnt():
    """Mutant: ``repr=False`` of ``correction_cv_`` -> True (the repr of a model trained on two
    jobs printed every weight's cross-validated error)."""
    m = DegradationModel(**dict(KW, correction=None)).fit(_train(24).assign(job=["a"] * 12 + ["b"] * 12))
    assert m.correction_cv_ and m.gbr_ is not None
    text = repr(m)
    assert text.startswith("DegradationModel(baseline='history', autoencoder=False, prior='components', ")
    for learnt in ("gbr_=", "dae_=", "scale_=", "correction_cv_=", "culprit_="):
        assert learnt not in text
    assert f"correction_={m.correction_!r}" in text


def _culprit_evidence_runs(seed=38):
    """24 interfered runs of one stage, 6 of each kind, whose culprit evidence
    (:data:`CULPRIT_EVIDENCE` against a clean baseline of 0) is heavy-tailed noise, each kind 2
    higher on its own features; returns (runs, evidence, kinds)."""
    kinds = np.array(["cpu", "disk", "memory", "network"] * 6)
    evidence = np.random.default_rng(seed).standard_t(1.5, size=(24, 6))
    evidence += 2.0 * (kinds[:, None] == np.array(["cpu", "disk", "memory", "network", "cpu", "disk"]))
    evidence -= evidence.min(axis=0)  # counters only rise above a baseline of 0 (log1p of them)
    rows = []
    for i, (z, kind) in enumerate(zip(evidence, kinds)):
        host = {h: 0.0 for h in HOST_FEATURES} | {f"base_{h}": 0.0 for h in HOST_FEATURES}
        for f, v in zip(CULPRIT_EVIDENCE, z):
            # available memory: the GiB something else took; the other counters: log1p over 0
            host[f] = -v if f == "host_mem_available_gib" else np.expm1(v)
        rows.append(_stage(f"r{i}", 0, {"wait_ms": 100.0}, duration_ms=1100.0) | host | {"label": f"{kind}:1"})
    return _frame(*rows), evidence, kinds


def test_a_weakly_regularised_culprit_model_is_fitted_to_convergence():
    """``culprit_c`` is the user's to set; at 1e5 on heavy-tailed evidence the solver needs 345
    iterations, over sklearn's default 100. Mutant: ``max_iter=2000`` -> 100 (a
    ConvergenceWarning, and probabilities up to 0.36 off the converged fit's). 2000 -> 2001
    changes nothing: equivalent."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from sparkpredict.models.degradation import _culprit_evidence

    runs, _, kinds = _culprit_evidence_runs()
    # the evidence as the model reads it: this fit is so weakly regularised that rounding in
    # the counters' log1p moves its converged point
    evidence = np.array([_culprit_evidence(runs.iloc[[i]]) for i in range(len(runs))])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        m = DegradationModel(culprit_c=1e5, **dict(KW, culprit="host")).fit(runs)
    converged = make_pipeline(StandardScaler(), LogisticRegression(C=1e5, max_iter=100_000)).fit(evidence, kinds)
    want = converged.predict_proba(evidence)
    got = np.array([[m.host_culprit(runs.iloc[[i]])[k] for k in converged.classes_] for i in range(len(runs))])
    assert got == pytest.approx(want, abs=1e-3)


def test_stages_recorded_without_a_baseline_run_time_column_are_scaled_by_their_own():
    """Mutants: _scale's ``return own`` for a frame without ``base_run_ms``, or its check,
    deleted (a KeyError on the missing column)."""
    m = DegradationModel(**KW).fit(_train())  # correction 0: the estimate is the prior alone
    run = _frame(_stage("x", 0, {"wait_ms": 100.0}, run_ms=400.0)).drop(columns="base_run_ms")
    assert m.predict(run) == pytest.approx([0.25], abs=1e-12)  # 100 ms more over its own 400 ms
    # nor a run time of its own: 1 ms per task
    assert m.predict(run.drop(columns="run_ms")) == pytest.approx([20.0], abs=1e-12)


def test_an_unknown_culprit_model_is_refused_with_the_ones_there_are():
    """Mutant: the check of ``culprit`` deleted (an unknown name trained the host model)."""
    from sparkpredict.errors import InputError

    with pytest.raises(InputError) as e:
        DegradationModel(**dict(KW, culprit="hosts")).fit(_train())
    assert (e.value.message, e.value.fix) == ("culprit='hosts' is not a culprit model", "use 'host', 'host3' or 'none'")
