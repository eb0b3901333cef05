"""Behaviours of sparkpredict/advice_source.py that an eighth mutation pass (HistorySource, the
path behind suggest_executors() and `sparkpredict suggest`; 2026-12-07, the mutants the seventh
pass left unrun, all in ``_memory_warning`` and ``_size_warnings``) found no test pinning.

No JVM: the model is its attributes as the advice reads them.
"""
from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from sparkpredict.advice_source import _SAME_RATIO, HistorySource
from sparkpredict.units import MAX_EXECUTORS

MiB = 2**20
_MILLION = "; >= 1000000 executors (or more executor memory) stay within what ran"


def _said(input_bytes: float, run_mem_mb: float, size: int, execs: int, mem_mb: int) -> str:
    """The memory warning for ``size`` on ``execs`` x ``mem_mb``, after one run of ``input_bytes``
    on one executor of ``run_mem_mb`` (no spill data)."""
    runs = pd.DataFrame({"run_id": ["r"], "input_bytes": [input_bytes], "executors": [1.0],
                         "executor_memory_mb": [run_mem_mb]})
    src = HistorySource("wc", SimpleNamespace(), runs)
    [w] = [w for w in src.warnings(size, execs, mem_mb, size / (execs * mem_mb * MiB))
           if "bytes of input per byte" in w]
    return w


def test_a_million_executors_that_stay_within_what_ran_are_named_not_refused():
    """Defect: the cap was checked against the ceil() estimate before the loops settled its float
    rounding, so 1005 x 10^6 MiB against a run of 1 byte per byte, which a million executors of
    1000 MiB hold at exactly the 1.005 allowed, said "no count up to 1,000,000 ... stays within
    what ran"; a byte more needs 1,000,001, and no count up to the cap does."""
    assert _SAME_RATIO == 1.005 and MAX_EXECUTORS == 10**6
    assert _said(1000.0 * MiB, 1000.0, 1005 * 10**6 * MiB, 4, 1000).endswith(_MILLION)
    assert "; no count up to 1,000,000 of 1000 MiB stays within what ran: 4 executors of >= " \
        in _said(1000.0 * MiB, 1000.0, 1005 * 10**6 * MiB + 1, 4, 1000)


def test_a_need_of_exactly_the_cap_is_named_as_a_count():
    """Mutant: ``need > MAX_EXECUTORS`` -> ``>=`` in ``_memory_warning``, so a size a MiB under what
    a million executors hold at 1.005 bytes per byte ran said no count up to 1,000,000 does."""
    assert _said(1000.0 * MiB, 1000.0, 1005 * 10**6 * MiB - MiB, 4, 1000).endswith(_MILLION)
