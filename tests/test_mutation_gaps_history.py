"""Behaviours of sparkpredict/advice_source.py beyond its size checks that a mutation audit found
no test pinning: where a run spilled heavily (10 % of its input, docs/advice.md), when older
measured runs are far enough below the newer ones to be warned of (10x), how a sweep's runs and
the masters are counted from the store's rows.

No JVM: the runs are the store's rows as frames.
"""
from __future__ import annotations

import json

import pandas as pd

from sparkpredict.advice_source import (
    _HEAVY_SPILL_FRACTION,
    _MEASURE_GAP,
    HistorySource,
    _all_local,
    _local_run_ids,
    _master_kinds,
    _measure_mix_note,
    _recovered_runs,
    _sweep_mix,
)

MiB = 2**20


class _Model:
    """A fitted model's attributes as the advice reads them (no prediction is asked of it)."""

    n_runs_ = None

    def predict_interval(self, X, level=0.8):  # pragma: no cover - the advice is not asked
        raise AssertionError("not asked")


def _memory(src: HistorySource, size: int, execs: int, mem: int) -> list[str]:
    return [w for w in src.warnings(size, execs, mem, size / (execs * mem * MiB))
            if "bytes of input per byte" in w]


def test_the_documented_spill_and_gap_thresholds():
    # docs/advice.md: "spilled to disk at least 10 % of its input bytes"; store.md/_measure_mix_note: 10x
    assert (_HEAVY_SPILL_FRACTION, _MEASURE_GAP) == (0.1, 10.0)


def test_a_run_that_spilled_exactly_a_tenth_of_its_input_spilled_heavily():
    # two runs of one executor of 1000 MiB: 100 MiB (0.1 bytes per byte) and 300 MiB (0.3)
    runs = pd.DataFrame({"run_id": ["small", "big"], "input_bytes": [100 * MiB, 300 * MiB],
                         "executors": [1.0, 1.0], "executor_memory_mb": [1000, 1000]})

    def at(spilled: int) -> list[str]:
        src = HistorySource("wc", _Model(), runs, spill=pd.Series({"small": 0, "big": spilled}))
        return _memory(src, 200 * MiB, 1, 1000)  # 0.2: between the two

    # a tenth of its 300 MiB: heavy, so only the small run's 0.1 ran without heavy spill
    [heavy] = at(30 * MiB)
    assert "holds 0.20 bytes of input per byte of executor memory, beyond the 0.10 that ran without " \
           "heavy spill; runs at 0.30 and above spilled heavily" in heavy, heavy
    # a byte less: not heavy, and 0.2 lies within what ran
    assert at(30 * MiB - 1) == []


def _measured(*rows) -> pd.DataFrame:
    """Runs rows: (run id, sparkpredict version, input bytes[, status[, source]])."""
    return pd.DataFrame([{"run_id": r[0], "sparkpredict_version": r[1], "input_bytes": r[2],
                          "status": r[3] if len(r) > 3 else "succeeded",
                          "input_bytes_source": r[4] if len(r) > 4 else "measured"} for r in rows])


def test_older_measured_runs_are_warned_of_from_ten_times_below_the_newer_ones():
    since = [("n1", "0.3.0", 9_000), ("n2", "0.3.0", 10_000), ("n3", "0.4.1", 50_000)]
    note = _measure_mix_note("pq", _measured(("o1", "0.2.0", 1_000), *since))
    assert note is not None and note.startswith(
        "1 run of pq had its input measured by sparkpredict before 0.3.0 (median 1 KB), far below "
        "the 3 measured since (median 10 KB)"), note
    assert note.endswith("--exclude`): o1")
    # the median of the newer runs a byte short of 10x: no warning
    assert _measure_mix_note("pq", _measured(("o1", "0.2.0", 1_000), ("n1", "0.3.0", 9_000),
                                             ("n2", "0.3.0", 9_999), ("n3", "0.4.1", 50_000))) is None


def test_the_measure_note_counts_succeeded_measured_runs_and_names_three():
    rows = [("o1", "0.2.0", 1_000), ("o2", "0.1.0", 1_000), ("o3", None, 1_000), ("o4", "0.2.9", 1_000),
            ("n1", "0.3.0", 100_000),
            ("failed", "0.3.0", 10, "failed"),            # not succeeded: not counted
            ("declared", "0.2.0", 1, "succeeded", "declared")]  # declared: the user's size
    note = _measure_mix_note("pq", _measured(*rows))
    assert note is not None and note.startswith("4 runs of pq had their input measured by sparkpredict "
                                                "before 0.3.0 (median 1 KB), far below the 1 measured "
                                                "since (median 100 KB)"), note
    assert note.endswith(": o1 o2 o3 (and 1 more)")
    # three are named with no "(and 0 more)"
    three = _measure_mix_note("pq", _measured(*rows[:3], *rows[4:]))
    assert three is not None and three.endswith("--exclude`): o1 o2 o3"), three
    # all older, or all newer: nothing spans the change
    assert _measure_mix_note("pq", _measured(*rows[:4])) is None
    assert _measure_mix_note("pq", _measured(("n1", "0.3.0", 100_000), ("n2", "0.3.0", 10))) is None
    # no rows, or rows without a version: nothing to tell apart
    assert _measure_mix_note("pq", None) is None
    assert _measure_mix_note("pq", pd.DataFrame()) is None
    assert _measure_mix_note("pq", _measured(*rows).drop(columns="sparkpredict_version")) is None
    # newer runs that read nothing Spark counts: no scale to compare with, however small the older
    assert _measure_mix_note("pq", _measured(("o1", "0.2.0", 0), ("n1", "0.3.0", 0))) is None


def _rows(*rows) -> pd.DataFrame:
    """Runs rows: (run id, status, master, swept)."""
    return pd.DataFrame([{"run_id": r[0], "status": r[1], "master": r[2],
                          "properties_json": json.dumps({"spark.master": r[2], **(
                              {"spark.sparkpredict.sweep.key": "wc|x"} if r[3] else {})})} for r in rows])


def test_a_sweeps_runs_and_the_masters_are_counted_over_succeeded_runs():
    raw = _rows(("s1", "succeeded", "local[2]", True), ("s2", "succeeded", "local[2]", True),
                ("a1", "succeeded", "yarn", False), ("f1", "failed", "k8s://https://h:443", True),
                ("f2", "failed", "spark://h:7077", False))
    assert _sweep_mix(raw) == (2, 1)
    assert _master_kinds(raw) == frozenset({"local", "yarn"})
    # rows without the columns: nothing known
    assert _sweep_mix(raw.drop(columns="properties_json")) == (0, 0)
    assert _master_kinds(raw.drop(columns="master")) == frozenset()
    # the warning needs both kinds
    src = HistorySource("wc", _Model(), sweep_mix=_sweep_mix(raw))
    [mixed] = [w for w in src.warnings(1, 1, None, None) if "`sparkpredict sweep`" in w]
    assert mixed.startswith("the history of wc mixes 2 runs of `sparkpredict sweep` with 1 started on its own")
    assert not [w for w in HistorySource("wc", _Model(), sweep_mix=(2, 0)).warnings(1, 1, None, None)
                if "`sparkpredict sweep`" in w]


def test_beyond_any_cluster_the_memory_each_advised_executor_needs_holds_the_input_as_the_runs_did():
    # one run of 1000 MiB on one executor of 1000 MiB: 1 byte per byte ran (no spill data)
    runs = pd.DataFrame({"run_id": ["r"], "input_bytes": [1000 * MiB], "executors": [1.0],
                         "executor_memory_mb": [1000]})
    src = HistorySource("wc", _Model(), runs)
    # 4 PiB on 4 executors of 1000 MiB: more than a million of them would be needed
    [w] = _memory(src, 4 * 2**50, 4, 1000)
    assert "no count up to 1,000,000 of 1000 MiB stays within what ran: 4 executors of >= 1019 TiB each " \
           "would" in w, w
    # without spill data the limit is the largest ratio that ran, and no run is said to have spilled
    assert "beyond the 1.00 that ran (no spill data recorded);" in w and "spilled heavily" not in w, w


class _Fitted(_Model):
    def __init__(self, n: int) -> None:
        self.n_runs_ = n


def test_the_recovery_warning_counts_the_runs_it_names_among_those_fitted():
    def warned(recovered, n: int = 3) -> str:
        src = HistorySource("sort", _Fitted(n))
        src.recovered = recovered
        [w] = [w for w in src.warnings(1, 1, None, None) if "retried failed tasks" in w]
        return w

    assert warned([("a", True), ("b", False)]).startswith(
        "2 of the 3 runs the model of sort was fitted on retried failed tasks, 1 of them running stages again")
    assert warned([("a", True), ("b", True), ("c", True)]).startswith(
        "all 3 runs the model of sort was fitted on retried failed tasks and ran stages again")
    assert warned([("a", False), ("b", False), ("c", False)]).startswith(
        "all 3 runs the model of sort was fitted on retried failed tasks (an executor lost")
    # ten are named at most; exactly ten are all named, with no "first 10 of" them
    ten = warned([(f"r{i}", True) for i in range(10)], n=20)
    assert "store edit r0 r1 r2 r3 r4 r5 r6 r7 r8 r9 --exclude`" in ten and "the first" not in ten, ten
    eleven = warned([(f"r{i}", True) for i in range(11)], n=20)
    assert eleven.endswith("r9 --exclude` (the first 10 of 11; the advice names the others once these are out)")
    assert warned([("a", True)], n=1).startswith(
        "the one run the model of sort was fitted on retried failed tasks and ran stages again")


def test_the_spill_warning_is_silent_below_two_hundredths_of_a_byte_per_byte_only():
    # docs/advice.md: "Below 0.02 bytes of input per byte of memory nothing is warned of"
    runs = pd.DataFrame({"run_id": ["r"], "input_bytes": [10 * MiB], "executors": [1.0],
                         "executor_memory_mb": [1000]})
    src = HistorySource("wc", _Model(), runs, spill=pd.Series({"r": 0}))
    assert _memory(src, 20 * MiB - 1, 1, 1000) == []
    [w] = _memory(src, 20 * MiB, 1, 1000)
    assert "holds 0.02 bytes of input per byte of executor memory, beyond the 0.01 that ran without heavy " \
           "spill; none of its runs spilled heavily, so whether this one does is untested" in w, w


def test_on_a_local_master_the_driver_memory_is_named_in_whole_mib_under_ten_gib():
    # local[2] runs: both threads share the driver's 1000 MiB, which held 0.1 bytes per byte
    runs = pd.DataFrame({"run_id": ["r"], "input_bytes": [100 * MiB], "executors": [2.0],
                         "executor_memory_mb": [1000]})
    src = HistorySource("wc", _Model(), runs, local=True)

    def asked(size: int) -> str:
        [w] = [w for w in src.warnings(size, 2, 1000, size / (1000 * MiB)) if "bytes of input per byte" in w]
        return w

    assert asked(150 * MiB).endswith("spark.driver.memory (--driver-memory) of >= 1500 MiB stays within what "
                                     "ran (more executors add none there)")
    # a whole GiB, or 10 GiB and more, is said in GiB
    assert "of >= 2 GiB stays" in asked(int(204.8 * MiB))
    assert "of >= 10.7 GiB stays" in asked(1100 * MiB)  # 10999 MiB
    assert "of >= 10.0 GiB stays" in asked(int(1024.2 * MiB))  # 10241 MiB: 10 GiB and more


def test_local_runs_are_those_on_a_local_master_of_any_thread_count():
    raw = _rows(("l1", "succeeded", "local", False), ("l2", "succeeded", " local[4] ", False),
                ("l3", "failed", "local[*]", False), ("lc", "succeeded", "local-cluster[2,1,1024]", False),
                ("y", "succeeded", "yarn", False))
    assert _local_run_ids(raw) == frozenset({"l1", "l2", "l3"})
    assert not _all_local(raw)
    assert _all_local(raw[raw.run_id.str.startswith("l") & (raw.run_id != "lc")])
    # no master recorded: no run is known to be local
    assert _local_run_ids(raw.drop(columns="master")) == frozenset()
    assert not _all_local(raw.drop(columns="master"))
    assert not _all_local(raw.iloc[:0]) and not _all_local(None) and _local_run_ids(None) == frozenset()


def test_a_history_of_one_input_size_is_warned_of_and_one_of_two_is_not():
    def said(sizes) -> list[str]:
        runs = pd.DataFrame({"run_id": [f"r{i}" for i in range(len(sizes))], "input_bytes": sizes,
                             "executors": [1.0, 2.0][:len(sizes)], "executor_memory_mb": 1000})
        return [w for w in HistorySource("wc", _Model(), runs).warnings(MiB, 1, None, None)
                if "read the same input size" in w]

    assert said([MiB, MiB]) == [("every run of wc read the same input size: how the runtime grows with input "
                                 "is an assumption of the model, not a measurement")]
    assert said([MiB, 2 * MiB]) == []


def test_counts_up_to_a_million_executors_are_named_and_beyond_it_the_memory_each():
    # one run held 1 byte per byte; the advice allows 0.5 % beyond what ran (_SAME_RATIO)
    runs = pd.DataFrame({"run_id": ["r"], "input_bytes": [1000 * MiB], "executors": [1.0],
                         "executor_memory_mb": [1000]})
    src = HistorySource("wc", _Model(), runs)
    # a million executors' worth: 995,025 of them hold at most 1.005 bytes per byte
    [w] = _memory(src, 10**9 * MiB, 4, 1000)
    assert w.endswith("; >= 995025 executors (or more executor memory) stay within what ran"), w
    [w] = _memory(src, 15 * 10**8 * MiB, 4, 1000)  # 1,492,538 needed
    assert "; no count up to 1,000,000 of 1000 MiB stays within what ran" in w, w


def test_no_recovered_runs_without_the_failed_task_counts_or_the_runs():
    raw = pd.DataFrame({"run_id": ["a", "b"], "status": "succeeded", "num_failed_tasks": [2, 0],
                        "properties_json": "{}"})
    runs = pd.DataFrame({"run_id": ["a", "b"]})
    assert _recovered_runs(raw, runs, frozenset()) == [("a", False)]
    # a store from before the column, or no runs of the job: nothing to name
    assert _recovered_runs(raw.drop(columns="num_failed_tasks"), runs, frozenset({"b"})) == []
    assert _recovered_runs(raw, None, frozenset({"b"})) == []
    assert _recovered_runs(raw, runs.iloc[:0], frozenset({"b"})) == []


def test_a_history_whose_every_run_spilled_heavily_asks_for_more_memory():
    runs = pd.DataFrame({"run_id": ["a", "b"], "input_bytes": [100 * MiB, 200 * MiB], "executors": [1.0, 2.0],
                         "executor_memory_mb": [1000, 1000]})
    src = HistorySource("wc", _Model(), runs, spill=pd.Series({"a": 10 * MiB, "b": 50 * MiB}))
    assert [w for w in src.warnings(MiB, 1, 1000, 1 / 1000) if "spilled heavily" in w] == [
        "every recorded run of wc spilled heavily to disk; give executors more memory (spark.executor.memory)"]


def test_fewer_than_ten_runs_are_warned_of():
    def few(n: int) -> list[str]:
        return [w for w in HistorySource("wc", _Fitted(n)).warnings(1, 1, None, None) if "the advice is rough" in w]

    assert few(9) == [("only 9 runs of wc in the history; the advice is rough until ~10 runs at several executor "
                      "counts and input sizes exist")]
    assert few(10) == []
