"""The whole-job model's fit and prediction paths, the one fitting function of both retrain paths
and the cache of fits, at the points a mutation audit of models/hybrid.py (all but the
below-counts hedge and the flat-sizes floor, audited before), fitting.py and fitcache.py found
no test pinning: each test here failed on a one-operator change of the module that the rest of
the suite let pass. Models with a known law come from ``law_model`` (an equation with set
parameters), so expected values are worked out by hand; no JVM, no timings.
"""
from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest
from test_mutation_gaps_intervals import GIB

# ---- fitcache --------------------------------------------------------------------------------

def test_a_files_stamp_is_its_contents_hash_read_once_per_process(tmp_path, monkeypatch):
    """A cached fit is keyed by its code's contents: two contents, two stamps; a file edited after
    this process read it keeps the stamp of the code the process imported."""
    from sparkpredict import fitcache

    monkeypatch.setattr(fitcache, "_STAMPS", {})
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_bytes(b"x = 1\n")
    b.write_bytes(b"x = 2\n")
    sa, sb = fitcache.code_stamp(a)[1], fitcache.code_stamp(b)[1]
    assert sa == "a.py:" + hashlib.sha256(b"x = 1\n").hexdigest()[:16]
    assert sb.split(":")[1] != sa.split(":")[1]
    a.write_bytes(b"x = 3\n")  # edited after it was read: the process still runs x = 1
    assert fitcache.code_stamp(a)[1] == sa


def test_a_list_of_the_fits_files_without_the_models_hashes_no_code(monkeypatch):
    """The models' own files must be among those hashed: a package whose ``models`` folder lists
    no file (a zip's glob finds none) would otherwise key every fit by the store's reader alone,
    and a new model's code would reuse the old code's fits."""
    from sparkpredict import fitcache

    real = fitcache.fit_code_files()
    others = [f for f in real if f.parent.name != "models"]
    assert others and len(others) < len(real)
    monkeypatch.setattr(fitcache, "_FIT_CODE_HASH", [])
    monkeypatch.setattr(fitcache, "fit_code_files", lambda: others)
    assert fitcache.fit_code_hash() == "unknown"
    monkeypatch.setattr(fitcache, "_FIT_CODE_HASH", [])
    monkeypatch.setattr(fitcache, "fit_code_files", lambda: real)
    assert fitcache.fit_code_hash() not in ("unknown", "")


# ---- fitting: the one fitting function of both retrain paths ---------------------------------

def _raw(job="j", cells=((2, 1), (2, 2), (4, 1), (4, 2), (8, 1), (8, 2)), **over):
    """Store ``runs`` rows of ``job``: one succeeded run per (MiB, executors) cell, runtime
    10 + 3·MiB/E seconds (an exact amdahl law)."""
    rows = [{"run_id": f"{job}-{mb}-{e}", "job": job, "status": "succeeded", "start_ms": i, "updated_ms": 1,
             "wall_ms": int(1000 * (10 + 3 * mb / e)), "input_bytes": mb * 2**20, "executors_requested": e,
             "executor_cores": 1, "executor_memory_mb": 1024} for i, (mb, e) in enumerate(cells)]
    return pd.DataFrame(rows).assign(**over)


def test_fit_group_refuses_the_runs_of_two_jobs_and_says_what_it_fitted():
    from sparkpredict.errors import InputError
    from sparkpredict.fitting import fit_group

    with pytest.raises(InputError, match="exactly one job, got 2"):
        fit_group(pd.concat([_raw("a"), _raw("b")], ignore_index=True), kind="amdahl")
    # rows of one job, out of order: the artifact's meta says the model, kind, runs and range
    doc = fit_group(_raw("a").iloc[::-1], kind="amdahl")
    meta = doc["meta"]
    assert (meta["model_name"], meta["fit_kind"], meta["n_runs"]) == ("amdahl", "amdahl", 6)
    assert meta["cv_mape"] == pytest.approx(0.0, abs=1e-6)  # the law is amdahl's, exactly
    assert meta["training_range"]["input_bytes"] == [2 * 2**20, 8 * 2**20]
    assert meta["training_range"]["executors"] == [1.0, 2.0]


def test_a_fit_outcome_names_the_error_class_and_a_job_with_no_rows_is_nameless(monkeypatch):
    from sparkpredict import fitting

    def silent(*a, **k):
        raise KeyError()  # str(KeyError()) is "": the class alone says what went wrong

    monkeypatch.setattr(fitting, "fit_group", silent)
    ((job, _, status, art, error),) = fitting.fit_group_safe(_raw("a"))
    assert (job, status, art, error) == ("a", "failed", None, "KeyError")
    ((job, *_),) = fitting.fit_group_safe(_raw("a").iloc[:0])
    assert job == ""
    ((job, *_),) = fitting.fit_group_safe(_raw("a").iloc[:1])  # one row: still its job
    assert job == "a"

    def full(*a, **k):
        raise ValueError("bad rows")

    monkeypatch.setattr(fitting, "fit_group", full)
    assert fitting.fit_group_safe(_raw("a"))[0][4] == "ValueError: bad rows"
    # a fault of the machine is not the job's: it stops the retrain instead of being recorded
    monkeypatch.setattr(fitting, "fit_group", lambda *a, **k: (_ for _ in ()).throw(MemoryError()))
    with pytest.raises(MemoryError):
        fitting.fit_group_safe(_raw("a"))
    # neither model asked for: no outcome at all; a stage model of runs without stage rows is
    # skipped, not failed
    assert fitting.fit_group_safe(_raw("a"), runtime_model=False) == []
    assert fitting.fit_group_safe(_raw("a"), None, None, stage_models=True, runtime_model=False) == [
        ("a", "stage", "skipped", None, None)]


def test_cv_mape_of_nan_or_no_number_is_saved_as_null():
    from sparkpredict.fitting import _float_or_none, _jsonable

    assert _float_or_none(float("nan")) is None and _float_or_none(None) is None
    assert _float_or_none("x") is None and _float_or_none(np.float32(0.25)) == 0.25
    assert _jsonable(None) is None
    assert _jsonable({"input_bytes": (np.float64(1.0), np.int64(2))}) == {"input_bytes": [1.0, 2]}


def test_a_pickle_entry_that_others_may_only_run_is_still_loaded(tmp_path, monkeypatch):
    """Only others' *write* bit refuses an entry: read or execute for others cannot replace it."""
    import os

    from sparkpredict import fitcache

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(fitcache, "_PRUNED", set())
    fitcache.write("monitor", "k", "pkl", lambda f: f.write(b"mine"))
    path = fitcache.entry_path("monitor", "k", "pkl")
    os.chmod(path, 0o645)
    assert fitcache.read("monitor", "k", "pkl", lambda f: f.read(), own_only=True) == b"mine"



def test_old_entries_are_pruned_once_per_process_and_kind(tmp_path, monkeypatch):
    """The pruning scans the folder at the first write of a kind only (every later write of a
    busy process would scan it again): an entry grown old since stays until the next process."""
    import os
    import time

    from sparkpredict import fitcache

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(fitcache, "_PRUNED", set())
    fitcache.write("advice", "a", "json", lambda f: f.write(b"{}"))
    old = tmp_path / "cache" / "advice" / "old.json"
    old.write_text("{}")
    os.utime(old, (time.time() - 40 * 86400,) * 2)
    fitcache.write("advice", "b", "json", lambda f: f.write(b"{}"))
    assert old.exists()
    monkeypatch.setattr(fitcache, "_PRUNED", set())  # a new process
    fitcache.write("advice", "c", "json", lambda f: f.write(b"{}"))
    assert not old.exists()


def test_up_to_three_runs_are_named_in_the_fix_and_four_get_the_placeholder():
    from sparkpredict.fitting import no_succeeded_run

    def fix(n, status):
        return no_succeeded_run(pd.DataFrame({"run_id": [f"r{i}" for i in range(n)], "status": status}))[1]

    assert fix(3, "excluded").startswith("include the runs to learn from again (sparkpredict store edit "
                                         "r0 r1 r2 --include)")
    assert fix(4, "excluded").startswith("include the runs to learn from again (sparkpredict store edit "
                                         "RUN_ID... --include; `sparkpredict store summary` lists the excluded runs)")
    assert fix(3, "incomplete").startswith("ingest the complete event logs of runs r0, r1, r2 (")
    assert fix(4, "incomplete").startswith("ingest the complete event logs of the incomplete runs (")

# ---- hybrid: the training columns -------------------------------------------------------------

def test_a_resource_recorded_as_zero_is_filled_with_the_runs_median_not_kept():
    """0 cores or 0 MiB per executor is no resource (a log that did not say): filled with the
    median of the runs that recorded one, as a missing value is, so the range stays 4 cores."""
    from test_mutation_gaps_intervals import _exact_runs

    from sparkpredict.models.hybrid import JobRuntimeModel

    runs = _exact_runs().assign(executor_cores=4.0, executor_memory_mb=2048.0)
    runs.loc[0, "executor_cores"] = 0.0
    runs.loc[1, "executor_memory_mb"] = np.nan
    m = JobRuntimeModel(kind="amdahl").fit(runs)
    assert m.training_range_["executor_cores"] == (4.0, 4.0)
    assert m.training_range_["executor_memory_mb"] == (2048.0, 2048.0)
    assert m.unrecorded_ == [] and m.dropped_runs_ == 0



# ---- hybrid: the prediction below the smallest size -------------------------------------------

def test_below_the_smallest_size_the_prediction_is_at_most_the_smallest_sizes():
    """docs/models.md: below the smallest size the point prediction is at most the smallest
    size's. A curve that falls as the input grows (20 - S/E s, S in GiB, fitted on 1-4 GiB)
    would read 19.75 s at 0.5 GiB on 2 executors; the smallest size's 19.5 s holds it."""
    from test_mutation_gaps_intervals import law_model, q

    from sparkpredict.models.analytical import FittedEquation
    from sparkpredict.models.selection import Component

    m = law_model(theta=(1.0, 0.0, 20.0))
    # no fit gives a falling equation (nor loads one: its a < 0 is refused), but an ML part can
    # fall; the rule is the prediction's, so the curve is set in place
    m.component_ = Component("equation", equation=FittedEquation("amdahl", 1, (-1.0, 0.0, 20.0), 0.0, 19))
    np.testing.assert_allclose(m.predict(q([2.0, 1.0, 0.5, 0.1], [2.0, 2.0, 2.0, 4.0])),
                               [19.0, 19.5, 19.5, 19.75], rtol=1e-12)


def test_the_fixed_cost_is_the_curve_at_one_byte_held_between_zero_and_the_edge():
    """A curve with no finite value at a 1-byte input (outside its domain) has no fixed cost:
    all of the largest size's runtime grows; a finite value is clipped to [0, edge]."""
    from sparkpredict.models.hybrid import _fixed_cost

    at_one = np.array([-np.inf, np.inf, np.nan, 5.0, -2.0, 1.5])
    F = {"input_bytes": np.full(6, 4 * GIB), "executors": np.arange(6, dtype=float)}

    def curve(G):
        assert np.all(G["input_bytes"] == 1.0)
        return at_one[G["executors"].astype(int)]

    np.testing.assert_array_equal(_fixed_cost(curve, F, np.full(6, 3.0)), [0.0, 0.0, 0.0, 3.0, 0.0, 1.5])
