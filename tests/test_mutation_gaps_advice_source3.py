"""Behaviours of sparkpredict/advice_source.py that a seventh mutation pass (HistorySource, the
path behind suggest_executors() and `sparkpredict suggest`; 2026-12-07, the mutants the sixth
pass left unrun) found no test pinning: each test here failed on a one-statement change that
every other JVM-free advice test let pass.

No JVM: the model is its attributes as the advice reads them.
"""
from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from sparkpredict.advice_source import HistorySource, SizeMix

MiB = 2**20


def test_a_run_without_recorded_stages_spilled_nothing_whatever_its_size():
    """Mutant: ``_memory_warning`` fills the spill of a run absent from the stages read with 1
    byte, not 0, so a run of a few bytes whose stages were never recorded counted as one that
    spilled heavily, and the warning said runs "at 9.3e-09 and above spilled heavily"."""
    runs = pd.DataFrame({"run_id": ["big", "tiny"], "input_bytes": [1024.0 * MiB, 10.0],
                         "executors": [2.0, 1.0], "executor_memory_mb": [1024.0, 1024.0],
                         "runtime_s": [60.0, 5.0]})
    src = HistorySource("etl", SimpleNamespace(), runs, spill=pd.Series({"big": 0}))
    size = 2048 * MiB  # 1.00 byte per byte at 2 executors of 1024 MiB, beyond the 0.50 that ran
    said = [w for w in src.warnings(size, 2, 1024, size / (2 * 1024 * MiB)) if "executor memory" in w]
    assert said == [("2 executors x 1024 MiB hold 1.00 bytes of input per byte of executor memory, beyond "
                    "the 0.50 that ran without heavy spill; none of its runs spilled heavily, so whether "
                    "this one does is untested; >= 4 executors (or more executor memory) stay within what ran")]


def test_three_runs_whose_sizes_differ_are_all_named_with_no_count_of_more():
    """Mutant: ``_size_warnings`` lists "; and N more" from three runs on, not past three, so a
    history of exactly three declared runs off what their stages read, all three named, ended
    the list with "; and 0 more"."""
    four = (("a", 1200, 1000), ("b", 1300, 1000), ("c", 1400, 1000), ("d", 1500, 1000))
    listed = "a declared 1.2 KB, its stages read 1 KB; b declared 1.3 KB, its stages read 1 KB; " \
             "c declared 1.4 KB, its stages read 1 KB"
    for compared, tail in ((four[:3], ""), (four, "; and 1 more")):
        mix = SizeMix(declared=len(compared), measured=1, compared=compared)
        said = HistorySource("etl", SimpleNamespace(), size_mix=mix)._size_warnings()
        assert len(said) == 1 and f"differ by more than 10% from what their stages read ({listed}{tail}): " \
            "one input is recorded as two sizes" in said[0], said
