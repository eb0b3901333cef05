"""Behaviours of sparkpredict/advice_source.py that a mutation audit found no test pinning: where
a declared size stops agreeing with what its stages read (SIZE_AGREES), when a job has a usual
declared/read ratio (3 comparable runs, half of them within 10 % of the low median), where a
run is out of line with it (SIZE_OFF, either way), the fix command's size, and the note that a
model given lags the store's runs.

No JVM: the store is a copy of tests/data/history (its runs all declared) with ``run_inputs``
rows written beside them as the listener writes them; the rest are the store's rows as frames.
"""
from __future__ import annotations

import pandas as pd
import pytest
from test_run_inputs import _sort_read_as

from sparkpredict import store as store_mod
from sparkpredict.advice_source import (
    SIZE_AGREES,
    SIZE_OFF,
    HistorySource,
    SizeMix,
    _size_mix,
)


def _raw(*rows) -> pd.DataFrame:
    """A job's runs rows: (run id, size source, input bytes[, status])."""
    return pd.DataFrame([{"run_id": r[0], "input_bytes_source": r[1], "input_bytes": r[2],
                          "status": r[3] if len(r) > 3 else "succeeded"} for r in rows])


def test_the_documented_thresholds():
    # docs/advice.md: "within 10 %", "3x or more above or below the job's usual ratio"
    assert (SIZE_AGREES, SIZE_OFF) == (0.10, 3.0)


def test_a_declared_size_agrees_up_to_ten_percent_of_what_its_stages_read_either_way():
    raw = _raw(("up", "declared", 1100), ("over", "declared", 1101),
               ("down", "declared", 900), ("under", "declared", 899))
    mix = _size_mix(raw, {rid: 1000 for rid in raw.run_id})
    assert mix.differ == (("over", 1101, 1000), ("under", 899, 1000))
    assert (mix.declared, mix.measured, mix.unknown) == (4, 0, 0)


def test_only_succeeded_declared_runs_with_both_sizes_are_compared():
    raw = _raw(("m", "measured", 5000), ("m0", "measured", 0),
               ("none", "declared", 2000),        # no run_inputs row: recorded before the table
               ("zero-read", "declared", 2000),   # its stages read no bytes Spark counts
               ("zero-size", "declared", 0),
               ("nan-size", "declared", float("nan")),
               ("failed", "declared", 9000, "failed"),
               ("ok", "declared", 2000),
               ("tiny", "declared", 1))           # a byte declared, a byte read: comparable
    read = {"zero-read": 0, "zero-size": 1000, "nan-size": 1000, "failed": 1000, "ok": 1000, "tiny": 1}
    mix = _size_mix(raw, read)
    assert (mix.declared, mix.measured, mix.unknown) == (6, 2, 4)
    assert mix.differ == (("ok", 2000, 1000),)
    # three comparable runs (m, ok and tiny; the measured one of 0 bytes is none): 1, 2 and 1
    assert mix.usual == 1.0


def test_a_run_that_declared_what_its_stages_read_is_out_of_line_where_the_job_declares_a_third():
    # docs/advice.md: a run is named when its declared size over what its stages read is 3x or
    # more from the job's usual ratio. A sort job declares its files' 16 MB and reads them 3
    # times; one run declared the 48 MB read, which the model would learn as 3x the input.
    sizes = [("s1", 16_000_000), ("s2", 16_000_000), ("s3", 16_000_000), ("s4", 16_000_000),
             ("s5", 16_000_000), ("typed", 48_000_000)]
    raw = _raw(*[(rid, "declared", size) for rid, size in sizes])
    mix = _size_mix(raw, {rid: 48_000_000 for rid, _ in sizes})
    assert mix.usual == pytest.approx(1 / 3)
    assert mix.differ == tuple((rid, 16_000_000, 48_000_000) for rid, _ in sizes[:5])
    assert mix.off() == [("typed", 48_000_000, 48_000_000)]
    [far] = _far(HistorySource("sort", _Model(), size_mix=mix))
    assert "(typed declared 48 MB, its stages read 48 MB), 3x or more away from the 0.33x" in far, far
    assert "`sparkpredict store edit typed --input-size 16000000`: 0.33x what its stages read" in far, far


def test_no_rows_or_no_size_source_is_no_mix():
    assert _size_mix(None) == SizeMix()
    assert _size_mix(pd.DataFrame()) == SizeMix()
    assert _size_mix(_raw(("d", "declared", 2000)).drop(columns="input_bytes_source"), {"d": 1000}) == SizeMix()


def test_a_usual_ratio_needs_three_comparable_runs():
    two = _raw(("m1", "measured", 10), ("d", "declared", 2000))
    assert _size_mix(two, {"d": 1000}).usual is None
    three = _raw(("m1", "measured", 1), ("m2", "measured", 10), ("d", "declared", 2000))
    # the low median of 1, 1 and 2, held by two of the three
    assert _size_mix(three, {"d": 1000}).usual == 1.0
    # a measured run of no bytes is no comparable run
    no_bytes = _raw(("m1", "measured", 10), ("m0", "measured", 0), ("d", "declared", 2000))
    assert _size_mix(no_bytes, {"d": 1000}).usual is None


def test_a_usual_ratio_needs_half_the_runs_within_ten_percent_of_it():
    read = {"a": 1000, "b": 1000, "c": 1000, "d": 1000}
    # ratios 1, 5, 6: the low median 5 is held by one of three
    spread = _raw(("m", "measured", 10), ("b", "declared", 5000), ("c", "declared", 6000))
    assert _size_mix(spread, read).usual is None
    # ratios 1, 1, 5, 6: the low median 1 is held by exactly half
    half = _raw(("m", "measured", 10), ("a", "declared", 1000), ("b", "declared", 5000), ("c", "declared", 6000))
    assert _size_mix(half, read).usual == 1.0
    # within 10 % of the usual ratio counts as holding it: 3 (2.7 and 3.3 about it) of 5
    read5 = {k: 1000 for k in "abcde"}
    near = _raw(("a", "declared", 2700), ("b", "declared", 3000), ("c", "declared", 3300),
                ("d", "declared", 9000), ("e", "declared", 500))
    assert _size_mix(near, read5).usual == 3.0
    wider = _raw(("a", "declared", 2690), ("b", "declared", 3000), ("c", "declared", 3310),
                 ("d", "declared", 9000), ("e", "declared", 500))
    assert _size_mix(wider, read5).usual is None
    # exactly 10 % from it (1.125 and 1.375 about 1.25, each exact in binary) still holds it
    edge = _raw(("a", "declared", 1125), ("b", "declared", 1250), ("c", "declared", 1375), ("d", "declared", 5000))
    assert _size_mix(edge, read).usual == 1.25


def test_off_is_three_times_the_usual_ratio_or_more_either_way():
    differ = (("high", 3000, 1000), ("not-high", 2999, 1000), ("low", 1000, 3000), ("not-low", 1000, 2999))
    assert [d[0] for d in SizeMix(compared=differ, usual=1.0).off()] == ["high", "low"]
    # relative to the job's ratio, not to what the stages read
    job = (("at", 1500, 1000), ("within", 1400, 1000), ("read", 1000, 1000), ("below", 1000, 6000))
    assert [d[0] for d in SizeMix(compared=job, usual=0.5).off()] == ["at", "below"]
    # no usual ratio (or none that is positive): nothing is called out of line
    assert SizeMix(compared=differ).off() == []
    assert SizeMix(compared=differ, usual=0.0).off() == []


class _Model:
    """A fitted model's attributes as the advice reads them (no prediction is asked of it)."""

    def __init__(self, n_runs: int | None = None, dropped: int = 0) -> None:
        self.n_runs_, self.dropped_runs_ = n_runs, dropped

    def predict_interval(self, X, level=0.8):  # pragma: no cover - the advice is not asked
        raise AssertionError("not asked")


def _far(src: HistorySource) -> list[str]:
    return [w for w in src._size_warnings() if "out of line" in w]


def test_the_fix_command_offers_the_size_at_the_jobs_ratio_and_quotes_the_store():
    off = (("r1", 30_000, 1000), ("r2", 40_000, 2000), ("r3", 50_000, 3000), ("r4", 60_000, 4000))
    src = HistorySource("sort", _Model(), size_mix=SizeMix(declared=20, compared=off, usual=0.4))
    src.store_path = "/tmp/a store"
    [far] = _far(src)
    assert far.startswith("the input size declared for 4 runs of sort is out of line with what their stages "
                          "read (r1 declared ")
    assert "; and 1 more), 3x or more away from the 0.4x of it that the job's runs recorded (their median)" in far
    assert "r4" not in far
    # the first run's read at the job's ratio: 1000 x 0.4
    assert "(`sparkpredict store edit r1 --input-size 400 --store '/tmp/a store'`: 0.4x what its stages read)" \
        in far
    assert "beside measured runs" not in far  # no measured run: a typo is the one reading


@pytest.mark.parametrize("usual, same", [(1.0, True), (0.9, True), (1.09, True), (0.89, False), (1.11, False)])
def test_a_usual_ratio_within_ten_percent_of_one_is_what_the_stages_read(usual, same):
    src = HistorySource("sort", _Model(), size_mix=SizeMix(declared=5, measured=3, compared=(("r", 7000, 1000),),
                                                           usual=usual))
    [far] = _far(src)
    assert far.startswith("the input size declared for 1 run of sort is out of line with what its stages "
                          "read (r declared 7 KB, its stages read 1 KB), 3x or more away from "), far
    assert "Correct it with `sparkpredict store edit RUN_ID --input-size SIZE`" in far
    assert ("where the job's runs recorded what their stages read" in far) is same, far
    # the size offered is at the job's ratio either way; the ratio is named where it is not 1
    fixed = round(1000 * usual)
    tail = "`)" if same else f"`: {usual:.2g}x what its stages read)"
    assert f"(`sparkpredict store edit r --input-size {fixed}{tail}" in far, far
    assert ("beside measured runs that count every read of them" in far)


def test_the_mix_warning_counts_the_near_and_unknown_declared_runs_not_the_far_ones():
    differ = (("near", 1500, 1000), ("far", 9000, 1000))
    mix = SizeMix(declared=6, measured=4, unknown=2, compared=differ, usual=1.0)
    src = HistorySource("wc", _Model(), size_mix=mix)
    [mixed] = [w for w in src._size_warnings() if "whose input size was declared" in w]
    assert "mixes 3 runs whose input size was declared" in mixed and "with 4 whose size was measured" in mixed
    assert "near declared" in mixed and "far declared" not in mixed
    assert "2 others keep no measured size to compare" in mixed
    # every declared run agrees with what its stages read, or is named as far off: no mix
    assert [w for w in HistorySource("wc", _Model(), size_mix=SizeMix(
        declared=6, measured=4, compared=(("far", 9000, 1000),), usual=1.0))._size_warnings()
        if "whose input size was declared" in w] == []
    # nothing measured: nothing mixed, however many declared runs differ
    assert [w for w in HistorySource("wc", _Model(), size_mix=SizeMix(
        declared=6, unknown=2, compared=(("near", 1500, 1000),), usual=1.0))._size_warnings()
        if "whose input size was declared" in w] == []


def test_a_store_given_beside_models_reads_what_the_declared_runs_stages_read(tmp_path, monkeypatch):
    path = _sort_read_as(tmp_path, monkeypatch, lambda sizes: 2 * sizes)[0].path
    runs = store_mod.open(path).runs()
    n = int(((runs.job == "sort") & (runs.status == "succeeded")).sum())
    src = HistorySource.resolve("sort", store=str(path), models={"sort": _Model(n_runs=n)})
    assert src.given_model and src.source == "from the models given"
    mix = src.size_mix
    # every declared sort run reads twice its size: all differ, all alike, none out of line
    assert (mix.declared, mix.measured, mix.unknown, len(mix.differ), mix.usual) == (n, 0, 0, n, 0.5)
    assert mix.off() == [] and _far(src) == []
    assert src.notes == []  # the model saw every run the store holds


def test_a_model_given_that_saw_fewer_runs_than_the_store_holds_says_so(tmp_path, monkeypatch):
    path = _sort_read_as(tmp_path, monkeypatch, lambda sizes: sizes)[0].path
    n = 24

    def notes(model) -> list[str]:
        return [m for m in HistorySource.resolve("sort", store=str(path), models={"sort": model}).notes
                if "the model given was fitted on" in m]

    [lag] = notes(_Model(n_runs=n - 1))
    assert lag.startswith(f"the model given was fitted on {n - 1} runs of sort, and the store given holds {n} "
                          "succeeded")
    assert notes(_Model(n_runs=n)) == []
    older = _Model(n_runs=n - 1)
    del older.dropped_runs_  # a model saved before it kept the runs it dropped: none dropped
    assert notes(older) == [lag]
    # runs the fit dropped (no positive size, count or runtime) were seen all the same
    assert notes(_Model(n_runs=n - 1, dropped=1)) == []
    assert notes(_Model(n_runs=None)) == []


def test_a_store_given_beside_models_without_the_jobs_runs_says_its_checks_are_off(tmp_path, monkeypatch):
    path = _sort_read_as(tmp_path, monkeypatch, lambda sizes: sizes)[0].path
    src = HistorySource.resolve("etl", store=str(path), models={"etl": _Model(n_runs=5)})
    assert src.runs is None and src.size_mix == SizeMix()
    assert src.notes == [(f"the store given ({path}) holds no succeeded run of etl: the advice comes from the "
                          "model folder alone, without the history's memory and spill checks")]
