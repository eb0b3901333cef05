"""Behaviours of sparkpredict/advice_source.py and advice_cache.py that a third mutation pass
(the memory and size warnings, the sweep and master mixes, ``resolve``, and advice_cache's
registry lookup and caches; 2026-12-06) found no test pinning: each test here failed on a
one-operator change of the rule it pins, which the JVM-free advice tests let pass.

No JVM: the model is its attributes as the advice reads them, the runs the store's rows as frames.
"""
from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
from test_advise_history import history, make_store
from test_mutation_gaps_history import _memory, _Model

from sparkpredict import store as store_mod
from sparkpredict import suggest_executors
from sparkpredict.advice_cache import _CACHE, _CACHE_SIZE, _remember
from sparkpredict.advice_source import _SAME_RATIO, HistorySource, SizeMix

MiB = 2**20


def test_runs_that_never_recorded_their_executor_memory_give_no_memory_warning():
    # sized runs without executor_memory_mb: nothing to compare with, and no run is said to have
    # spilled heavily (it did not: 0 bytes spilled), however large the question
    runs = pd.DataFrame({"run_id": ["a", "b"], "input_bytes": [100 * MiB, 200 * MiB], "executors": [1.0, 2.0],
                         "executor_memory_mb": [float("nan")] * 2})
    for spill in (None, pd.Series({"a": 0, "b": 0})):
        src = HistorySource("wc", _Model(), runs, spill=spill)
        assert [w for w in src.warnings(10**12, 1, 1000, 10**12 / (1000 * MiB))
                if "spilled heavily" in w or "bytes of input per byte" in w] == []


def test_below_two_hundredths_a_ratio_at_which_a_run_spilled_heavily_is_warned_of():
    # docs/advice.md: below 0.02 nothing is warned of "unless runs at that ratio or below spilled
    # heavily". Run "ok" held 0.005 bytes per byte, run "skew" 0.01 and spilled all of its input.
    runs = pd.DataFrame({"run_id": ["ok", "skew"], "input_bytes": [5 * MiB, 10 * MiB], "executors": [1.0, 1.0],
                         "executor_memory_mb": [1000, 1000]})
    src = HistorySource("wc", _Model(), runs, spill=pd.Series({"ok": 0, "skew": 10 * MiB}))
    # at the skewed run's very ratio: warned, naming where spill began
    [w] = _memory(src, 10 * MiB, 1, 1000)
    assert "holds 0.01 bytes of input per byte of executor memory, beyond the 0.005 that ran without heavy " \
           "spill; runs at 0.01 and above spilled heavily" in w, w
    # just below it (and beyond what ran cleanly): silent
    assert _memory(src, 9 * MiB, 1, 1000) == []


def test_the_process_cache_keeps_its_size_by_dropping_the_oldest_entry():
    # advice_cache: "the oldest entries go beyond _CACHE_SIZE"; the cache is the module's own dict
    # (advice_source imports it by name), so it is emptied and refilled in place, then restored
    held = dict(_CACHE)
    try:
        _CACHE.clear()
        for i in range(_CACHE_SIZE + 1):
            _remember(("k", i), i)
        assert list(_CACHE) == [("k", i) for i in range(1, _CACHE_SIZE + 1)]
    finally:
        _CACHE.clear()
        _CACHE.update(held)


def _mixed(mix: SizeMix) -> list[str]:
    return [w for w in HistorySource("wc", _Model(), size_mix=mix)._size_warnings()
            if "whose input size was declared" in w]


def test_the_mix_warning_says_why_by_what_the_declared_runs_lack():
    # declared runs none of which kept a measured size: the general caution, no count of "others"
    [unknown] = _mixed(SizeMix(declared=2, measured=3, unknown=2))
    assert "mixes 2 runs whose input size was declared" in unknown, unknown
    assert ". A declared run keeps no measured size to compare: where each declared size is what its " \
           "stages read, the sizes agree and nothing is wrong; where not, one input is recorded as two " \
           "sizes. Declare the size" in unknown, unknown
    assert "others keep" not in unknown and "other keeps" not in unknown, unknown
    # one declared run 50 % off what its stages read and none unknown: named alone, capitalised
    [near] = _mixed(SizeMix(declared=1, measured=3, compared=(("n", 1500, 1000),), usual=1.0))
    assert ". It differs by more than 10% from what its stages read (n declared 1.5 KB, its stages read " \
           "1 KB): one input is recorded as two sizes. Declare" in near, near
    assert "keep" not in near.split("Declare")[0], near
    # both: the one that differs, then the one other without a measured size
    [both] = _mixed(SizeMix(declared=2, measured=3, unknown=1, compared=(("n", 1500, 1000),), usual=1.0))
    assert "One of them differs by more than 10% from what its stages read" in both, both
    assert "; 1 other keeps no measured size to compare (recorded before" in both, both


def test_a_ratio_at_the_tolerance_above_what_ran_counts_as_what_ran():
    # one run held exactly 1 byte per byte; _SAME_RATIO (docs/advice.md: a size rounded in print
    # is no step beyond what ran) is the tolerance: at it, no warning; past it, one
    runs = pd.DataFrame({"run_id": ["r"], "input_bytes": [1000 * MiB], "executors": [1.0],
                         "executor_memory_mb": [1000]})
    src = HistorySource("wc", _Model(), runs)

    def warned(ratio: float) -> list[str]:
        return [w for w in src.warnings(1000 * MiB, 1, 1000, ratio) if "bytes of input per byte" in w]

    assert warned(_SAME_RATIO) == []
    [w] = warned(_SAME_RATIO * 1.001)
    assert w.startswith("1 executor x 1000 MiB holds 1.01 bytes of input per byte of executor memory, beyond "
                        "the 1.00 that ran (no spill data recorded)"), w


def test_a_size_mix_is_immutable_as_the_default_every_source_shares():
    # HistorySource's size_mix defaults to one SizeMix() for every source: an assignment to it
    # would change every other source's; frozen, it is refused
    with pytest.raises(dataclasses.FrozenInstanceError):
        SizeMix().declared = 1  # type: ignore[misc]
    assert HistorySource("a", _Model()).size_mix is HistorySource("b", _Model()).size_mix


def test_a_model_given_alone_is_a_given_model_whose_shift_fix_asks_for_a_refit():
    # models= without a store: the edit the shift warning names changes no advice by itself, so
    # the warning adds the store to name and the refit (as it does with a store given)
    # its newest 3 runs (10 since the first of them) took twice what a model of its 12 earlier runs predicts
    model = _Model()
    model.recent_shift_ = {"runs": 3, "ratio": 2.0, "since_ms": 1_700_000_000_000, "previous_ms": 1_699_000_000_000,
                           "earlier_runs": 12, "level": 0.9, "runs_since": 10}
    src = HistorySource.resolve("etl", models={"etl": model})
    assert src.given_model and src.source == "from the models given" and src.store_path is None
    [w] = [w for w in src.warnings(1, 1, None, None) if "the job changed" in w]
    assert "--before 2023-11-14T22:13:20Z` (with --store naming the store its runs came from), then fit the " \
           "model again on the store's runs (`sparkpredict runs`, then `sparkpredict fit`): the model given " \
           "was fitted on both kinds of run. If it has passed" in w, w


def _registry_note(tmp_path, monkeypatch, change) -> tuple[list[str], str | None]:
    """The registry notes of the advice for etl after ``change(path)`` on a store whose runs
    the registry holds a current model of, and the advice's model source."""
    import sparkpredict.advice_cache as cache
    from sparkpredict.retrain import retrain_local

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    path = make_store(tmp_path / "s", history(sizes=(10, 20, 40)))
    retrain_local(path, kind="amdahl")
    change(path)
    cache._CACHE.clear()
    a = suggest_executors("etl", "30GB", store=path)
    return [w for w in a.warnings if "the registry's model" in w], a.model_source


def test_a_run_that_did_not_succeed_added_after_the_retrain_is_named_as_a_change_of_the_runs(tmp_path, monkeypatch):
    def failed_run(path):
        runs, _ = history(sizes=(80,), seed=1)
        store_mod.open(path).append({"runs": runs.iloc[:1].assign(run_id="app-etl-failed", app_id="app-etl-failed",
                                                                   status="failed")})

    n = len(history(sizes=(10, 20, 40))[0])
    [note], source = _registry_note(tmp_path, monkeypatch, failed_run)
    assert note.startswith(f"the registry's model of etl predates its latest runs (the job's runs changed since: "
                           f"a run edited, or one that did not succeed added; {n} usable then and now): this "
                           "advice is from a model fitted on the current runs; run `sparkpredict retrain"), note
    assert source == "fitted on the store's runs"


def test_a_registry_model_of_another_format_is_not_used_and_named_so(tmp_path, monkeypatch):
    from sparkpredict import registry

    def other_format(path):
        monkeypatch.setattr(registry, "runtime_model_format", lambda: 10**6)

    [note], source = _registry_note(tmp_path, monkeypatch, other_format)
    assert note.startswith("the registry's model of etl is of another format than this sparkpredict writes: this "
                           "advice is from a model fitted on the job's runs; run `sparkpredict retrain"), note
    assert source == "fitted on the store's runs"


def test_an_unreadable_registry_model_names_the_errors_own_fix_or_else_retrain(tmp_path, monkeypatch):
    import json
    from pathlib import Path

    def artifact(path) -> Path:
        [f] = (Path(path) / "_models" / "artifacts").rglob("runtime-*.json")
        return f

    def not_json(path):
        artifact(path).write_text("{ cut short")

    # a damaged artifact: the read's own error, whose fix refits that job alone
    [note], _ = _registry_note(tmp_path, monkeypatch, not_json)
    assert note.startswith("the registry's model of etl is unusable (model artifact "), note
    assert "is not valid JSON): this advice is from a model fitted on the job's runs; " in note
    assert note.endswith("--job etl --force`"), note

    def no_model(path):
        f = artifact(path)
        doc = json.loads(f.read_text())
        doc["model"] = {}
        f.write_text(json.dumps(doc))

    # valid JSON whose model cannot be built: named as that job's artifact, with the refit of
    # that job (as `load_models` says it), not the `sparkpredict fit` of a model file's loader
    [note], _ = _registry_note(tmp_path / "model", monkeypatch, no_model)
    assert note.startswith("the registry's model of etl is unusable (model artifact "), note
    assert "of job 'etl': not a sparkpredict job model): this advice is from a model fitted on the job's runs; " \
        "refit it: `sparkpredict retrain --store " in note and note.endswith("--job etl --force`"), note

    # an error that names no fix of its own (the disk failing under the read, which cannot be
    # made here: root reads any file): the plain retrain
    from sparkpredict import registry

    def disk_gone(path):
        def read(*a, **k):
            raise OSError("disk gone")
        monkeypatch.setattr(registry, "read_artifact", read)

    [note], _ = _registry_note(tmp_path / "plain", monkeypatch, disk_gone)
    assert note.startswith("the registry's model of etl is unusable (disk gone): this advice is from a model "
                           "fitted on the job's runs; run `sparkpredict retrain --store "), note


def test_a_job_never_retrained_is_fitted_from_its_runs_without_a_registry_note(tmp_path, monkeypatch):
    # a store whose registry holds another job's model only: nothing of etl to pass over
    import sparkpredict.advice_cache as cache
    from sparkpredict.retrain import retrain_local

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    path = make_store(tmp_path / "s", history(sizes=(10, 20, 40)), history(job="other", sizes=(10, 20, 40)))
    retrain_local(path, kind="amdahl", jobs=["other"])
    cache._CACHE.clear()
    a = suggest_executors("etl", "30GB", store=path)
    assert a.model_source == "fitted on the store's runs (no retrain has registered a model of the job)"
    assert [w for w in a.warnings if "registry" in w] == []


def test_a_run_of_no_input_that_spilled_nothing_did_not_spill_heavily():
    # docs/advice.md: "a spill of 0 bytes is not 10 % of 0". Beside a run that held 0.01 bytes per
    # byte, a run that read nothing would otherwise count as spilling heavily at ratio 0, and
    # every question below 0.02 would be warned of as "at 0 and above spilled heavily"
    runs = pd.DataFrame({"run_id": ["none", "a"], "input_bytes": [0, 10 * MiB], "executors": [1.0, 1.0],
                         "executor_memory_mb": [1000, 1000]})
    src = HistorySource("wc", _Model(), runs, spill=pd.Series({"none": 0, "a": 0}))
    assert _memory(src, 15 * MiB, 1, 1000) == []
    [w] = _memory(src, 20 * MiB, 1, 1000)  # from 0.02 on: beyond what ran, and untested
    assert "beyond the 0.01 that ran without heavy spill; none of its runs spilled heavily" in w, w


def test_the_count_the_memory_warning_names_is_the_smallest_that_it_does_not_warn_of():
    # a size at a float boundary: 25 x (what ran x _SAME_RATIO) exactly in decimal, which the
    # ceil() of the quotient names though the check itself, in floats, fails at 25; the loops
    # settle it, and the count named must be one at which the advice asked again is quiet
    runs = pd.DataFrame({"run_id": ["r"], "input_bytes": [675_340_208], "executors": [1.0],
                         "executor_memory_mb": [1000]})
    src = HistorySource("wc", _Model(), runs)
    size = 16_967_922_726
    [w] = _memory(src, size, 1, 1000)
    named = int(w.rsplit("; >= ", 1)[1].split(" executors")[0])
    assert _memory(src, size, named, 1000) == []
    assert len(_memory(src, size, named - 1, 1000)) == 1
    assert named == 26


def test_on_a_local_master_the_warning_says_one_executor_shares_and_several_share_the_driver():
    runs = pd.DataFrame({"run_id": ["r"], "input_bytes": [100 * MiB], "executors": [2.0],
                         "executor_memory_mb": [1000]})
    src = HistorySource("wc", _Model(), runs, local=True)
    size = 150 * MiB  # 0.15 bytes per byte of the driver's 1000 MiB, beyond the 0.1 that ran
    [one] = [w for w in src.warnings(size, 1, 1000, size / (1000 * MiB)) if "bytes of input per byte" in w]
    assert one.startswith("the driver's 1000 MiB, which local mode's 1 executor shares (one JVM), holds 0.15 "
                          "bytes of input per byte"), one
    [two] = [w for w in src.warnings(size, 2, 1000, size / (1000 * MiB)) if "bytes of input per byte" in w]
    assert two.startswith("the driver's 1000 MiB, which local mode's 2 executors share (one JVM), holds"), two
