"""Behaviours of sparkpredict/advice_source.py that a fifth mutation pass (HistorySource, the path
behind suggest_executors() and `sparkpredict suggest`; 2026-12-07) found no test pinning: each
test here failed on a one-statement change that every other JVM-free advice test let pass.

No JVM: the model is its attributes as the advice reads them.
"""
from __future__ import annotations

from types import SimpleNamespace

from sparkpredict.advice_source import HistorySource


def test_a_value_no_run_gave_is_the_models_own_fill_in_before_the_middle_of_its_range():
    """Mutant: ``_latest`` drops ``return float(defaults[col])``, so a model without its latest
    run's values (saved before it kept them) asked the middle of the training range, not the
    training median the model fills in with."""
    ranges = {"executor_cores": (1.0, 8.0), "iterations": (2.0, 10.0)}
    model = SimpleNamespace(defaults_={"executor_cores": 2.0, "iterations": 3.0}, training_range_=ranges,
                            feature_names_=["input_bytes", "executors", "executor_cores", "iterations"])
    src = HistorySource("etl", model)
    assert src.default_column("executor_cores") == 2  # the median, not (1 + 8) / 2 rounded
    # a job parameter left out of the question is filled in the same way
    assert list(src.query(100, [2.0], None, None)["iterations"]) == [3.0]
    # the latest run's value, where the model kept one, comes before its median
    model.latest_ = {"executor_cores": 6.0}
    assert src.default_column("executor_cores") == 6
    # with neither, the middle of the range; a column the model knows nothing of has no default
    src = HistorySource("etl", SimpleNamespace(training_range_=ranges))
    assert src.default_column("executor_cores") == 4  # 4.5 rounds to even
    assert src.default_column("executor_memory_mb") is None
