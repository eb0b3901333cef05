"""Behaviours of sparkpredict/advice_source.py's warnings and error builders that a mutation audit
found no test pinning: the unvaried-resource warning's scaling factor for runs at more than one
core; a missing failed-task count is none failed; a size is unknown only for runs that all read no
bytes (one run is enough, none is not); the shift warning's time to the second or millisecond, its
"x faster" from the ratio as printed and its ten-run "rough" edge; runs of one byte are sized;
difflib's 0.6 likeness for "did you mean"; the unknown-job hint's ten names, 60-character cut and
"not recorded" note.

No JVM: the model is its attributes as the advice reads them, the runs the store's rows as frames.
"""
from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from sparkpredict.advice_source import (
    HistorySource,
    _all_local,
    _closest,
    _recovered_runs,
    _unknown_job,
)


def _unvaried(seen: dict, cores=None, mem=None) -> list[str]:
    src = HistorySource("etl", SimpleNamespace(unvaried_=seen))
    return [w for w in src.warnings(100, 2, mem, None, cores=cores) if "per executor and this asks" in w]


def test_the_unvaried_warning_scales_by_the_ratio_of_the_asked_to_the_recorded_value():
    # every run at 2 cores, asked for 8: at most 4x faster (8 / 2), not 16x; at 4 GiB asked 1 GiB: 4x slower
    [up] = _unvaried({"executor_cores": 2.0}, cores=8)
    assert "every run of etl used 2 cores per executor and this asks for 8 cores" in up, up
    assert "allows at most the 4x speed-up of perfect scaling" in up, up
    [down] = _unvaried({"executor_memory_mb": 4096.0}, mem=1024)
    assert "its upper bound at least the 4x slow-down of perfect scaling" in down, down
    # asked for the value every run had: nothing to warn of
    assert _unvaried({"executor_cores": 2.0}, cores=2) == []


def test_a_run_with_no_failed_task_count_recorded_retried_nothing():
    # num_failed_tasks missing on a row (NaN) counts as none failed, not as some
    raw = pd.DataFrame({"run_id": ["a", "b", "c"], "status": "succeeded",
                        "num_failed_tasks": [float("nan"), 0, 3], "properties_json": "{}"})
    runs = pd.DataFrame({"run_id": ["a", "b", "c"]})
    assert _recovered_runs(raw, runs, frozenset()) == [("c", False)]
    # none failed and none ran a stage again: an empty list, as when some did
    assert _recovered_runs(raw.iloc[:2], runs, frozenset()) == []


def test_a_size_is_unknown_only_for_runs_that_all_read_no_bytes():
    def unknown(sizes) -> bool:
        runs = pd.DataFrame({"run_id": [f"r{i}" for i in range(len(sizes))], "input_bytes": sizes,
                             "executors": 2.0})
        return HistorySource("etl", SimpleNamespace(), runs).sizes_unknown()

    assert unknown([0, float("nan")])
    assert unknown([0])  # one run without a size is enough to say so
    assert not unknown([0, 1])  # a byte read is a size
    # no runs at all (a model folder beside a store without the job's runs): nothing to say of them
    assert not unknown([])
    assert not HistorySource("etl", SimpleNamespace()).sizes_unknown()


T0 = 1_780_000_000_000  # 2026-05-28T20:26:40Z, a whole second


def _shift(**kw) -> str:
    shift = {"runs": 4, "ratio": 2.0, "since_ms": T0 + 500, "previous_ms": T0 - 1, "level": 0.8,
             "earlier_runs": 20, "runs_since": 12, **kw}
    shift = {k: v for k, v in shift.items() if v is not None}  # None: a finding saved without it
    warning = HistorySource("etl", SimpleNamespace(recent_shift_=shift))._shift_warning()
    assert warning is not None
    return warning


def test_the_shift_warning_names_the_time_to_the_second_unless_an_earlier_run_started_in_it():
    # the newest runs since T0 + 500 ms, the one before at T0 - 1 ms: the second T0 tells them apart
    assert "--before 2026-05-28T20:26:40Z`" in _shift()
    # one before at T0 exactly, within the same second: only the millisecond does
    assert "--before 2026-05-28T20:26:40.500Z`" in _shift(previous_ms=T0)
    assert "(since 2026-05-28 20:26 UTC)" in _shift(previous_ms=T0)


def test_the_shift_warning_says_how_much_faster_from_the_ratio_as_printed_and_never_divides_by_zero():
    assert "took a median 2.00x the time a model of its 20 earlier runs predicts (slower)" in _shift()
    assert "took a median 0.64x the time" in _shift(ratio=0.64)
    assert "(1.56x faster)" in _shift(ratio=0.64)        # 1 / 0.64, as a reader works it out
    assert "(1.56x faster)" in _shift(ratio=0.6449)      # from 0.64 as printed, not 1 / 0.6449 = 1.55
    assert "(100.00x faster)" in _shift(ratio=0.001)     # printed 0.00x: taken as 0.01
    assert "each beyond its 80% interval" in _shift()


def test_the_shift_warning_says_the_advice_is_rough_while_fewer_than_ten_runs_are_left():
    rough = "and the advice is rough until ~10 exist"
    assert "that leaves its 9 runs since, " + rough in _shift(runs_since=9)
    assert rough not in _shift(runs_since=10)
    # a finding saved without runs_since: the newest runs it counted are those left
    assert "that leaves its 4 runs since, " + rough in _shift(runs_since=None)


def test_a_name_is_offered_from_difflibs_usual_likeness_of_six_tenths():
    # "join" in "joins-big": 2 * 4 / 13 = 0.62 alike; "etl" in "etl-daily": 0.5
    assert _closest("join", ["etl-daily", "joins-big"]) == " (did you mean 'joins-big'?)"
    assert _closest("abcde", ["abcxy"]) == " (did you mean 'abcxy'?)"  # 0.6 exactly
    assert _closest("etl", ["etl-daily"]) == ""
    assert _closest("ETL", ["etl-daily", "etl"]) == " (did you mean 'etl'?)"  # a case first


def test_no_master_recorded_is_no_local_history():
    assert _all_local(None) is False
    assert _all_local(pd.DataFrame({"run_id": ["a"]})) is False


def test_runs_of_a_byte_are_sized_and_get_the_memory_check():
    # the memory check reads runs that recorded a size, and a byte is one: both spilled it whole
    runs = pd.DataFrame({"run_id": ["a", "b"], "input_bytes": [1, 1], "executors": [1.0, 2.0],
                         "executor_memory_mb": [1000, 1000]})
    src = HistorySource("etl", SimpleNamespace(), runs, spill=pd.Series({"a": 1, "b": 1}))
    w = src.warnings(10, 2, 1000, 10 / (2 * 1000 * 2**20))
    assert "every recorded run of etl spilled heavily to disk; give executors more memory " \
           "(spark.executor.memory)" in w, w


def test_an_unknown_job_lists_ten_names_cut_at_sixty_characters_and_says_when_there_are_more():
    ten = [f"job{i:02d}" for i in range(10)]
    fix = _unknown_job("nothing-like-it", ten, "store '/s'").fix
    assert fix.startswith("use one of: " + ", ".join(ten) + "; if 'nothing-like-it' ran, it was not recorded"), fix
    eleven = _unknown_job("nothing-like-it", ten + ["job10"], "store '/s'").fix
    assert eleven.startswith("use one of: " + ", ".join(ten) + " ...; "), eleven
    long = "x" * 61
    cut = _unknown_job("nothing-like-it", ["a" * 60, long], "store '/s'").fix
    assert cut.startswith(f"use one of: {'a' * 60}, {'x' * 59}…;"), cut
    # asked about in a models folder, not a store: a name it lacks is no unrecorded run
    assert _unknown_job("nothing-like-it", ten, "models folder '/m'").fix == "use one of: " + ", ".join(ten)
    # a name like one there is taken for a typo of it, not for a run never recorded
    assert _unknown_job("Job05", ten, "store '/s'").fix == "use one of: " + ", ".join(ten) + " (did you mean 'job05'?)"


def test_an_unknown_job_where_no_job_is_named_says_to_record_runs():
    err = _unknown_job("etl", [], "store '/s'")
    assert (err.message, err.fix) == ("no job 'etl' in store '/s'", "record runs of the job first")
