"""Advice review (2026-12-04): the dynamic-allocation minimum without a deadline."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sparkpredict
from sparkpredict.models.hybrid import JobRuntimeModel

GIB = 2**30


@pytest.fixture(scope="module")
def model() -> JobRuntimeModel:
    rng = np.random.default_rng(3)
    rows = [{"job": "j", "input_bytes": s * GIB, "executors": e,
             "runtime_s": (10 + 60 * s / e) * rng.lognormal(0, 0.03)}
            for s in (1, 2, 4) for e in (2, 4, 8) for _ in range(3)]
    return JobRuntimeModel().fit(pd.DataFrame(rows))


def test_without_a_deadline_the_minimum_is_the_fewest_count_asked_about(model):
    a = sparkpredict.suggest_executors("j", 2 * GIB, executor_counts=[64, 2, 8, 4], models={"j": model})
    assert [c.executors for c in a.candidates] == [2, 4, 8, 64]
    assert a.dynamic_allocation[0] == 2 and a.dynamic_allocation[1] >= a.executors
    # over a range, min_executors is that fewest count
    b = sparkpredict.suggest_executors("j", 2 * GIB, min_executors=3, max_executors=8, models={"j": model})
    assert b.dynamic_allocation[0] == 3


@pytest.mark.parametrize("given, fix", [(95, "confidence=0.95"), ("99.9", "confidence=0.999"),
                                        ("0.95%", "confidence=0.95"), (1.5, "e.g. confidence=0.9")])
def test_a_confidence_written_as_a_percentage_is_refused_with_the_level_meant(model, given, fix):
    from sparkpredict.errors import InputError

    with pytest.raises(InputError) as e:
        sparkpredict.suggest_executors("j", 2 * GIB, confidence=given, models={"j": model})
    assert e.value.fix == f"give {fix}"


def test_the_cli_refuses_a_percent_sign_that_makes_a_level_hundredths(capsys):
    from sparkpredict.cli import main

    with pytest.raises(SystemExit) as e:
        main(["suggest", "--job", "sort", "--input-size", "1GB", "--confidence", "0.95%"])
    assert e.value.code == 2
    assert "'0.95%' is a 0.95% interval (write 0.95 or 95% for a 95% one)" in capsys.readouterr().err


def test_memory_advice_beyond_any_cluster_names_the_memory_per_executor(tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from test_advise_history import history, make_store

    make_store(tmp_path / "st", history(spill_above=2.0))
    a = sparkpredict.suggest_executors("etl", "100PB", store=tmp_path / "st")
    (w,) = [w for w in a.warnings if "executor memory" in w]
    assert "no count up to 1,000,000 of 4096 MiB stays within what ran" in w and "PiB each would" in w
    assert ">= 19" not in w  # once a count of ~20 million executors
    b = sparkpredict.suggest_executors("etl", "300GB", store=tmp_path / "st")
    assert any(">= 60 executors (or more executor memory) stay within what ran" in w for w in b.warnings)
