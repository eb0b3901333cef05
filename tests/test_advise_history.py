"""suggest_executors on a real history store: the real runtime model fitted on the fly,
recovery of a known scaling law, and the warnings that need the store (spill, dynamic
allocation, too few runs), plus the errors for missing history."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from sparkpredict import store as store_mod
from sparkpredict import suggest_executors
from sparkpredict.errors import StoreError, UnknownJobError

GB = 10**9
SIZES_GB = (10, 20, 40, 80)
EXECS = (1, 2, 4, 8)


def law(size_gb, e):
    """The job's true runtime: 100 s per GB spread over the executors + 20 s fixed."""
    return 100.0 * size_gb / e + 20.0


def history(job="etl", mem_mb=4096, spill_above=None, dyn=False, repeats=2, seed=0, sizes=SIZES_GB,
            execs=EXECS, status="succeeded"):
    """runs (+ stages) rows of a recurring job sampled from ``law`` with 3 % noise."""
    rng = np.random.default_rng(seed)
    runs, stages = [], []
    k = 0
    for s in sizes:
        for e in execs:
            for _ in range(repeats):
                k += 1
                rid = f"app-{job}-{k:03d}"
                t = law(s, e) * (1 + 0.03 * rng.standard_normal())
                props = {"spark.executor.instances": str(e)}
                if dyn:
                    props["spark.dynamicAllocation.enabled"] = "true"
                runs.append({"run_id": rid, "app_id": rid, "job": job, "app_name": job, "status": status,
                             "start_ms": 1_700_000_000_000 + k * 1000, "wall_ms": int(t * 1000),
                             "updated_ms": 1_700_000_000_000 + k * 1000, "executors_requested": e,
                             "executors_max": e, "executor_cores": 4, "executor_memory_mb": mem_mb,
                             "input_bytes": int(s * GB), "properties_json": json.dumps(props)})
                ratio = s * GB / (e * mem_mb * 2**20)
                spilled = int(0.5 * s * GB) if spill_above is not None and ratio > spill_above else 0
                stages.append({"run_id": rid, "stage_id": 0, "stage_attempt_id": 0, "disk_spilled_bytes": spilled,
                               "memory_spilled_bytes": spilled})
    return pd.DataFrame(runs), pd.DataFrame(stages)


def fast_model(frame):
    """An equation-only fit (no model selection): quick, for tests about warnings, not accuracy."""
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_job

    return fit_job(runs_table(frame[0]), kind="amdahl")


def make_store(path, *frames):
    st = store_mod.open(path, create=True)
    for runs, stages in frames:
        st.append({"runs": runs, "stages": stages})
    return str(path)


@pytest.fixture(scope="module")
def etl_store(tmp_path_factory):
    return make_store(tmp_path_factory.mktemp("hist") / "store", history(),
                      history(job="other", sizes=(1, 2), execs=(1, 2)))


def test_recovers_the_cheapest_count_that_meets_the_deadline(etl_store):
    # true law at 30 GB: 3000/E + 20 <= 450 from E = 7; the 90 % upper bound adds a few %.
    a = suggest_executors("etl", "30GB", deadline_s="7m30s", store=etl_store, max_executors=16)
    assert a.meets_deadline is True and a.upper_s <= 450
    assert 7 <= a.executors <= 9
    assert law(30, a.executors) <= 450                     # it truly meets the deadline
    assert abs(a.predicted_runtime_s - law(30, a.executors)) / law(30, a.executors) < 0.1
    assert a.n_runs == 32 and a.model_cv_mape is not None and a.model_name
    # 30 GB lies inside the sizes; the count may lie one past the largest recorded (8), when
    # 8's upper bound misses 450 s by a hair
    assert a.extrapolation["input_bytes"] == 0
    assert a.extrapolates is (a.executors > max(EXECS))
    assert a.executor_memory_mb == 4096 and a.executor_cores == 4


def test_extrapolation_beyond_the_largest_size(etl_store):
    a = suggest_executors("etl", "160GB", store=etl_store, min_executors=2, max_executors=8)
    assert a.extrapolates is True
    assert a.extrapolation["input_bytes"] == pytest.approx(160 / 80 - 1, rel=1e-6)


def test_store_models_are_cached_per_store_version(etl_store, monkeypatch):
    import sparkpredict.advice_cache as cache

    suggest_executors("etl", "30GB", store=etl_store)
    held = dict(cache._CACHE)
    # same committed batches: the second question is answered without a fit, from the same entries
    monkeypatch.setattr(cache, "_fit", lambda *a: pytest.fail("refitted an unchanged store"))
    suggest_executors("etl", "31GB", store=etl_store)
    assert all(cache._CACHE.get(k) is v for k, v in held.items())


def test_a_store_copied_over_at_the_same_path_is_not_answered_from_the_cache(tmp_path, monkeypatch):
    """Batch names stay when a store is restored or copied over in place; the runs do not."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    import sparkpredict.advice_cache as cache

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    path = make_store(tmp_path / "store", history(sizes=(10, 20, 40)))
    before = suggest_executors("etl", "30GB", executor_counts=[4], store=path)
    (runs_file,) = (tmp_path / "store" / "runs").glob("*.parquet")
    t = pq.read_table(runs_file)
    slower = t.set_column(t.schema.get_field_index("wall_ms"), "wall_ms",
                          pc.multiply(t["wall_ms"], 5).cast(t.schema.field("wall_ms").type))
    pq.write_table(slower, runs_file)
    for cached in (True, False):  # this process's cache, then a new process's (the disk cache)
        if not cached:
            cache._CACHE.clear()
        after = suggest_executors("etl", "30GB", executor_counts=[4], store=path)
        assert after.predicted_runtime_s == pytest.approx(5 * before.predicted_runtime_s, rel=0.1)


def test_prepare_advice_fits_the_jobs_of_the_runs_it_is_given(tmp_path, monkeypatch):
    """What submit and sweep call as their runs end: each named run's job fitted and kept on disk
    for the next process, found by run or application id; ids of no run, a store that is not
    there or a job with no succeeded run prepare nothing, and raise nothing."""
    import sparkpredict.advice_cache as cache

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    runs, stages = history(sizes=(10, 20, 40))
    runs["app_id"] = "spark-" + runs["run_id"]  # as a sweep knows its runs
    path = make_store(tmp_path / "store", (runs, stages), history(job="broken", status="failed"))
    assert cache.prepare_advice(path, ["no-such-run"]) == []
    assert cache.prepare_advice(str(tmp_path / "nowhere"), [runs["run_id"][0]]) == []
    assert cache.prepare_advice(path, ["app-broken-001"]) == []
    assert not (tmp_path / "cache").exists() and not (tmp_path / "nowhere").exists()
    assert cache.prepare_advice(path, [runs["app_id"][3], "app-broken-001"]) == ["etl"]
    assert len(list((tmp_path / "cache" / "advice").iterdir())) == 1
    cache._CACHE.clear()  # a new process: suggest loads the kept fit, never fits again
    monkeypatch.setattr(cache, "_fit", lambda *a: pytest.fail("refitted a prepared job"))
    assert suggest_executors("etl", "30GB", store=path).model_name


def test_spill_warning_names_the_safe_count(tmp_path):
    mem = 1024
    h = history(mem_mb=mem, spill_above=10.0)
    path = make_store(tmp_path / "s", h)
    models = {"etl": fast_model(h)}  # the store still supplies runs and spill
    runs, _ = h
    ratio = runs.input_bytes / (runs.executors_requested * mem * 2**20)
    limit = ratio[ratio <= 10.0].max()
    a = suggest_executors("etl", "30GB", store=path, models=models, executor_counts=[2, 8])
    assert a.executors == 2  # cheapest, no deadline
    w = [x for x in a.warnings if "executor memory" in x]
    assert len(w) == 1 and f"{limit:.2f}" in w[0] and "spilled heavily" in w[0]
    need = math.ceil(30 * GB / (limit * mem * 2**20))
    assert f">= {need} executors" in w[0]
    assert a.candidates[0].input_per_memory == pytest.approx(30 * GB / (2 * mem * 2**20))
    ok = suggest_executors("etl", "30GB", store=path, models=models, executor_counts=[8])
    assert not any("executor memory" in x for x in ok.warnings)


def test_beyond_the_memory_the_runs_used_without_any_spill_is_called_untested(tmp_path):
    # 64 GiB executors that never spilled: the runs held at most 0.8 GB on one of them (0.012
    # bytes per byte, shown as such, not "0.01"); 8 GB needs 10 of them to stay within that
    h = history(mem_mb=64 * 1024, sizes=(0.1, 0.2, 0.4, 0.8), spill_above=None)
    path = make_store(tmp_path / "s", h)
    a = suggest_executors("etl", "8GB", store=path, models={"etl": fast_model(h)}, executor_counts=[1])
    (w,) = [x for x in a.warnings if "executor memory" in x]
    runs, _ = h
    limit = (runs.input_bytes / (runs.executors_requested * 64 * 2**30)).max()
    assert f"beyond the {limit:.2g} that ran without heavy spill" in w
    assert "none of its runs spilled heavily, so whether this one does is untested" in w
    assert ">= 10 executors (or more executor memory) stay within what ran" in w
    # beyond what ran (0.0122) but far below what could fill a heap: 1 GB on one 64 GiB
    # executor holds 0.0146 bytes of input per byte, and no spill is warned of
    small = suggest_executors("etl", "1GB", store=path, models={"etl": fast_model(h)}, executor_counts=[1])
    assert small.candidates[0].input_per_memory > limit * 1.1
    assert not [x for x in small.warnings if "executor memory" in x], small.warnings
    # unless runs at that ratio or below spilled heavily (a skewed join does): then the runs say so
    h = history(mem_mb=64 * 1024, sizes=(0.1, 0.2, 0.4, 0.8), spill_above=0.003)
    path = make_store(tmp_path / "spilled", h)
    small = suggest_executors("etl", "1GB", store=path, models={"etl": fast_model(h)}, executor_counts=[1])
    (w,) = [x for x in small.warnings if "executor memory" in x]
    assert "spilled heavily" in w and ">= 5 executors" in w, w


def test_dynamic_allocation_history_gets_bounds(tmp_path):
    h = history(dyn=True)
    path = make_store(tmp_path / "s", h)
    a = suggest_executors("etl", "30GB", deadline_s="10m", store=path, models={"etl": fast_model(h)},
                          max_executors=16)
    lo, hi = a.dynamic_allocation
    assert any(f"minExecutors={lo} and maxExecutors={hi}" in w for w in a.warnings)
    assert lo <= a.executors <= hi


def test_few_runs_warn(tmp_path):
    h = history(sizes=(10, 20), execs=(1, 2, 4), repeats=1)
    path = make_store(tmp_path / "s", h)
    a = suggest_executors("etl", "15GB", store=path, models={"etl": fast_model(h)})
    assert any("only 6 runs" in w for w in a.warnings)


def test_single_executor_count_warns(tmp_path):
    """Eight recorded runs of four sizes, all at 2 executors: advice still comes (from the
    replay of their tasks, since no equation can learn the count from them), and says that
    the history cannot show how the runtime scales with the count."""
    from pathlib import Path

    import pyarrow.compute as pc

    src = store_mod.open(Path(__file__).parent / "data" / "history")
    runs = src.read("runs", form="arrow")
    keep = runs.filter(pc.and_(pc.equal(runs["job"], "sqljoin"), pc.equal(runs["executors_requested"], 2)))
    ids = keep["run_id"].to_pylist()
    assert len(ids) == 8
    dst = store_mod.open(tmp_path / "s", create=True)
    dst.append({t: src.read(t, form="arrow", run_ids=ids) for t in ("executors", "stages", "tasks", "runs")})
    a = suggest_executors("sqljoin", "10MB", store=dst.path, max_executors=4)
    assert any(w.startswith("every run of sqljoin used 2 executors") for w in a.warnings), a.warnings
    assert {c.executors for c in a.candidates} >= {1, 2, 3, 4}


def test_unknown_job_lists_the_jobs_of_the_store(etl_store):
    with pytest.raises(UnknownJobError) as e:
        suggest_executors("nightly", "1GB", store=etl_store)
    assert "'nightly'" in e.value.message and "etl" in e.value.fix and "other" in e.value.fix


def test_empty_store_says_record_runs_first(tmp_path):
    store_mod.open(tmp_path / "empty", create=True)
    with pytest.raises(UnknownJobError) as e:
        suggest_executors("etl", "1GB", store=tmp_path / "empty")
    assert "no runs" in e.value.message and "record runs" in e.value.fix


def test_failed_runs_only(tmp_path):
    path = make_store(tmp_path / "s", history(status="failed", sizes=(10,), execs=(1, 2)))
    with pytest.raises(UnknownJobError) as e:
        suggest_executors("etl", "1GB", store=path)
    assert "no succeeded runs" in e.value.message


def test_a_store_of_failed_runs_only_says_what_its_runs_are_in_every_command(tmp_path, capsys):
    """`report`, `runs` and `evaluate` on a store none of whose runs succeeded named only "record
    some first", as for an empty store: the runs are there, failed, and the fix is to mend them."""
    from sparkpredict.cli import main

    path = make_store(tmp_path / "s", history(status="failed", sizes=(10,), execs=(1, 2)))
    for argv in (["report", "--store", path, "--out", str(tmp_path / "r.html")],
                 ["runs", "--store", path, "--out", str(tmp_path / "r.csv")],
                 ["evaluate", "--store", path]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert f"error: store {path} holds no succeeded runs: 4 runs failed" in err, (argv, err)
        assert "fix: fix what made its runs fail" in err, (argv, err)
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "r.csv").exists()
    # an empty store keeps the advice to record runs
    store_mod.open(tmp_path / "empty", create=True)
    assert main(["runs", "--store", str(tmp_path / "empty"), "--out", str(tmp_path / "r.csv")]) == 2
    assert "fix: record some first" in capsys.readouterr().err


def test_missing_store_is_a_store_error(tmp_path):
    with pytest.raises(StoreError) as e:
        suggest_executors("etl", "1GB", store=tmp_path / "nothing-here")
    assert e.value.fix
    assert not (tmp_path / "nothing-here").exists()  # nothing written


def test_store_path_never_starts_a_jvm(tmp_path):
    import subprocess
    import sys

    path = make_store(tmp_path / "s", history(sizes=(10, 20), execs=(1, 2, 4), repeats=1))
    code = ("import sys; sys.modules['pyspark'] = None; from sparkpredict import suggest_executors; "
            f"a = suggest_executors('etl', '30GB', store={path!r}); "
            "print('LOADED', [m for m in ('pyspark', 'py4j') if sys.modules.get(m) is not None], a.executors)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert "LOADED [] " in p.stdout, p.stdout + p.stderr


def test_registry_model_is_used_first_and_a_retrain_is_seen(tmp_path):
    from sparkpredict.retrain import retrain_local

    path = make_store(tmp_path / "s", history())
    retrain_local(path, kind="amdahl")  # an equation the automatic choice would not name
    a = suggest_executors("etl", "30GB", store=path)
    assert a.model_name == "amdahl"
    retrain_local(path, kind="ernest", force=True)
    assert suggest_executors("etl", "30GB", store=path).model_name == "ernest"


def test_a_registry_model_that_predates_new_runs_is_not_used_and_the_advice_says_so(tmp_path, monkeypatch):
    """A run recorded after the retrain: the registry's model is behind (retrain --dry-run
    lists the job), so the advice is from a fit of the current runs, as `report` shows it, with
    a warning that names `sparkpredict retrain`; the fit is cached like any other; after the
    next retrain the registry's model is used again."""
    import sparkpredict.advice_cache as cache
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_job
    from sparkpredict.retrain import plan, retrain_local

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    path = make_store(tmp_path / "s", history())
    retrain_local(path, kind="amdahl")  # an equation the automatic choice would not name
    before = suggest_executors("etl", "30GB", store=path)
    assert before.model_name == "amdahl" and not any("registry" in w for w in before.warnings)

    runs, stages = history(sizes=(80,), seed=1)
    new = runs.iloc[:1].assign(run_id="app-etl-new", app_id="app-etl-new")
    store_mod.open(path).append({"runs": new, "stages": stages.iloc[:1].assign(run_id="app-etl-new")})
    assert plan(path, kind="amdahl")[0] == ["etl"]
    after = suggest_executors("etl", "30GB", store=path)
    fresh = fit_job(runs_table(store_mod.open(path)).query("job == 'etl'"))
    assert after.model_name == fresh.name_ != "amdahl" and after.n_runs == before.n_runs + 1
    assert after.predicted_runtime_s == pytest.approx(float(fresh.predict(
        {"input_bytes": [30 * GB], "executors": [after.executors], "executor_cores": [4],
         "executor_memory_mb": [4096]})[0]), rel=1e-9)
    (note,) = [w for w in after.warnings if "registry" in w]
    assert "predates its latest runs" in note and f"sparkpredict retrain --store {path}" in note

    fits = []
    monkeypatch.setattr(cache, "_fit", lambda *a, **k: fits.append(1))
    cache._CACHE.clear()  # a new process: the fit comes from the disk cache, the warning again
    again = suggest_executors("etl", "30GB", store=path)
    assert fits == [] and again.model_name == after.model_name and note in again.warnings

    retrain_local(path, kind="amdahl")
    current = suggest_executors("etl", "30GB", store=path)
    assert current.model_name == "amdahl" and not any("registry" in w for w in current.warnings)


def test_a_fit_is_kept_on_disk_for_the_next_process_until_new_runs_arrive(tmp_path, monkeypatch):
    """`sparkpredict suggest` twice: the second process loads the first one's fit (no refit, no
    sklearn); a damaged entry is refit; a new run changes the committed batches and forces a refit."""
    import json

    import sparkpredict.advice_cache as cache

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    path = make_store(tmp_path / "store", history(sizes=(10, 20, 40)))
    first = suggest_executors("etl", "30GB", deadline_s=600, store=path)
    (entry,) = (tmp_path / "cache" / "advice").glob("*.json")
    real_fit, fits = cache._fit, []

    def counting_fit(*a, **k):
        fits.append(1)
        return real_fit(*a, **k)

    monkeypatch.setattr(cache, "_fit", counting_fit)
    cache._CACHE.clear()  # a new process
    again = suggest_executors("etl", "30GB", deadline_s=600, store=path)
    assert fits == []
    assert again.executors == first.executors and again.model_name == first.model_name
    assert again.predicted_runtime_s == pytest.approx(first.predicted_runtime_s, rel=1e-12)

    entry.write_text("{not json")
    cache._CACHE.clear()
    assert suggest_executors("etl", "30GB", deadline_s=600, store=path).executors == first.executors
    assert fits == [1]
    json.loads(entry.read_text())  # rewritten whole

    runs, stages = history(sizes=(80,), seed=1)
    store_mod.open(path).append({"runs": runs.iloc[:1], "stages": stages.iloc[:1]})
    cache._CACHE.clear()
    suggest_executors("etl", "30GB", deadline_s=600, store=path)
    assert fits == [1, 1]
    assert len(list((tmp_path / "cache" / "advice").glob("*.json"))) == 2


def test_an_unwritable_cache_costs_only_a_refit(tmp_path, monkeypatch):
    import sparkpredict.advice_cache as cache

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(blocker))
    path = make_store(tmp_path / "store", history(sizes=(10, 20, 40)))
    cache._CACHE.clear()
    a = suggest_executors("etl", "30GB", deadline_s=600, store=path)
    assert a.executors > 0 and blocker.read_text().startswith("a file")
    assert list(tmp_path.glob("**/*.tmp")) == []


def test_an_interval_the_history_cannot_narrow_says_which_run_would(tmp_path, monkeypatch):
    # the listener-recorded history of this repository: sqljoin ran on 4-32 MB with repeats up
    # to 2.6x apart, so 2 GB (62.5x its largest input) is beyond what it can bound
    from pathlib import Path

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    real = Path(__file__).parent / "data" / "history"
    far = suggest_executors("sqljoin", "2GB", deadline_s="5m", store=real)
    wide = [w for w in far.warnings if "cannot pin this run down" in w]
    assert len(wide) == 1 and far.upper_s > 10 * far.predicted_runtime_s
    assert "input size 2 GB is 62.5x the runs' largest (32.0 MB)" in wide[0]
    near = suggest_executors("sqljoin", "16MB", deadline_s="5m", store=real)
    assert near.upper_s <= 10 * near.predicted_runtime_s
    assert not any("cannot pin" in w for w in near.warnings)


def test_a_clean_history_far_out_keeps_a_usable_interval(etl_store):
    # 3 % noise on a known law: even 100x beyond the largest input the upper bound stays within
    # 10x the prediction, so the wide-interval warning stays silent
    a = suggest_executors("etl", "8TB", store=etl_store)
    assert a.extrapolation["input_bytes"] > 90
    assert a.upper_s <= 10 * a.predicted_runtime_s
    assert not any("cannot pin" in w for w in a.warnings)


def test_runs_no_model_can_tell_apart_are_named_as_the_likely_cause(tmp_path, monkeypatch):
    # two applications recorded under one job name: every other run is 5x slower at the same
    # size and count, which no input size or executor count explains
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    runs, stages = history(repeats=2)
    runs.loc[runs.index % 2 == 1, "wall_ms"] *= 5
    a = suggest_executors("etl", "30GB", store=make_store(tmp_path / "s", (runs, stages)))
    assert a.model_cv_mape > 0.35
    said = [w for w in a.warnings if "cross-validated error" in w]
    assert len(said) == 1 and "give each its own (spark.sparkpredict.job, or `sparkpredict ingest --job NAME`" in said[0]
    assert f"{a.model_cv_mape:.0%}" in said[0]
    # the runs to explain first are named: three of the 5x slower ones
    listed, pointer = said[0].split("the runs furthest above the model: ")[1].rstrip(")").split("; ")
    assert pointer == "`sparkpredict explain --job etl` explains each"
    named = listed.split(", ")
    slow = set(runs.loc[runs.index % 2 == 1, "run_id"])
    assert len(named) == 3
    for item in named:
        rid, ratio = item.rsplit(" ", 1)
        assert rid in slow and float(ratio.rstrip("x")) >= 1.25


def test_real_history_names_runs_that_explain_finds_slowed():
    """wordcount in tests/data/history: 42 % CV error; the first sweep ran on a busier machine."""
    from pathlib import Path

    from sparkpredict.monitor import explain_run

    hist = Path(__file__).parent / "data" / "history"
    a = suggest_executors("wordcount", "16MB", store=hist)
    said = next(w for w in a.warnings if "cross-validated error" in w)
    first = said.split("the runs furthest above the model: ")[1].split(" ")[0]
    assert explain_run(first, hist).degradation > 0.5


def test_one_application_with_ordinary_noise_gets_no_such_warning(etl_store):
    a = suggest_executors("etl", "30GB", store=etl_store)
    assert a.model_cv_mape < 0.1
    assert not any("cross-validated error" in w for w in a.warnings)


def test_runs_without_an_input_size_say_so_and_are_not_called_spilled(tmp_path, monkeypatch):
    # three real event logs whose applications are all named "Spark shell": none read from a
    # source the input metrics see, none spilled
    from pathlib import Path

    from sparkpredict.capture.eventlog_ingest import ingest_event_logs

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    logs = Path(__file__).parent / "data" / "eventlogs"
    ingest_event_logs([logs / "rp_nosql_eventlog.json", logs / "sparklens_local-1532512550423.json",
                       logs / "eventlog_4nodes_8cores_dynamic_alloc.zstd"], tmp_path / "s")
    runs = store_mod.open(tmp_path / "s").runs()
    assert set(runs["job"]) == {"Spark shell"} and (runs["input_bytes"] == 0).all()
    a = suggest_executors("Spark shell", "1GB", store=tmp_path / "s")
    assert any("no run of Spark shell recorded an input size" in w for w in a.warnings)
    assert not any("same input size" in w or "spilled" in w for w in a.warnings), a.warnings
    # the same runs told apart by nothing the model sees: the unreliable-fit warning too
    assert any("cross-validated error" in w for w in a.warnings)


def test_a_job_whose_runs_all_failed_is_told_what_to_do(tmp_path):
    """The fix said "advice needs at least one succeeded run": a rule, not a thing to do."""
    path = make_store(tmp_path / "s", history(job="flaky", sizes=(1,), execs=(1, 2), repeats=1, status="failed"))
    with pytest.raises(UnknownJobError) as e:
        suggest_executors("flaky", "1GB", store=path)
    assert e.value.message.startswith("job 'flaky' has no succeeded runs in ")
    assert "record a succeeded run" in e.value.fix and "sparkpredict store summary" in e.value.fix


def test_the_explain_command_in_the_warning_quotes_a_job_name_for_the_shell(tmp_path, monkeypatch):
    """`sparkpredict explain --job Spark shell` pasted into a shell explains job 'Spark'."""
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    runs, stages = history(repeats=2)
    runs.loc[runs.index % 2 == 1, "wall_ms"] *= 5
    runs["job"] = "Spark shell"
    a = suggest_executors("Spark shell", "30GB", store=make_store(tmp_path / "s", (runs, stages)))
    (said,) = [w for w in a.warnings if "cross-validated error" in w]
    assert "`sparkpredict explain --job 'Spark shell'` explains each" in said


def test_a_run_in_flight_keeps_the_registry_model_current(tmp_path, monkeypatch):
    """A running run's row changes with every flush and no model learns from it: it made the
    registry's model look stale for the whole run (refit, and "trained on 16 runs, 16 now")."""
    from sparkpredict.retrain import plan, retrain_local

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    path = make_store(tmp_path / "s", history())
    retrain_local(path, kind="amdahl")
    runs, stages = history(sizes=(80,), seed=1)
    flying = runs.iloc[:1].assign(run_id="app-etl-flying", app_id="app-etl-flying", status="running")
    store_mod.open(path).append({"runs": flying, "stages": stages.iloc[:1].assign(run_id="app-etl-flying")})
    a = suggest_executors("etl", "30GB", store=path)
    assert a.model_name == "amdahl" and not any("registry" in w for w in a.warnings)
    assert plan(path, kind="amdahl")[0] == []
    # it ends: now it is a run the model has not seen
    ended = flying.assign(status="failed", updated_ms=flying["updated_ms"] + 5000)
    store_mod.open(path).append({"runs": ended})
    assert plan(path, kind="amdahl")[0] == ["etl"]
    (note,) = [w for w in suggest_executors("etl", "30GB", store=path).warnings if "registry" in w]
    # as many usable runs as then: the note says what changed instead of "16 runs, 16 now"
    assert "a run edited, or one that did not succeed added" in note and "runs, 16 now" not in note


def test_the_cache_needs_no_home_and_keeps_only_entries_in_use(tmp_path, monkeypatch):
    """With no home folder to find (HOME unset, no password entry), suggest failed with a
    RuntimeError traceback; entries of every store version were kept for ever."""
    import os
    import time
    from pathlib import Path

    import sparkpredict.advice_cache as cache
    from sparkpredict import fitcache

    path = make_store(tmp_path / "store", history(sizes=(10, 20, 40)))
    monkeypatch.delenv("SPARKPREDICT_CACHE", raising=False)

    def no_home():
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    cache._CACHE.clear()
    assert suggest_executors("etl", "30GB", deadline_s=600, store=path).executors > 0
    monkeypatch.undo()

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "advice"
    folder.mkdir(parents=True)
    stale, used = folder / "stale.json", folder / "used.json"
    for f in (stale, used):
        f.write_text("{}")
        os.utime(f, (time.time() - 40 * 86400,) * 2)
    assert fitcache.read("advice", "used", "json", lambda f: f.read()) == b"{}"  # a read keeps it
    monkeypatch.setattr(fitcache, "_PRUNED", set())
    cache._CACHE.clear()
    suggest_executors("etl", "30GB", deadline_s=600, store=path)  # writes an entry: prunes first
    names = {p.name for p in folder.iterdir()}
    assert "stale.json" not in names and "used.json" in names and len(names) == 2


def test_the_fit_is_keyed_by_the_code_that_shapes_the_runs_and_the_libraries(monkeypatch):
    import sparkpredict.advice_cache as cache
    from sparkpredict import fitcache

    key = cache._disk_key("/s", (), "etl")
    assert key == cache._disk_key("/s", (), "etl")
    stamps = dict(fitcache._STAMPS)
    for name in ("units.py", "io.py", "schema.py", "config.py"):
        (f,) = [p for p in stamps if p.name == name and p.parent.name in ("sparkpredict", "store")]
        monkeypatch.setitem(fitcache._STAMPS, f, "edited")
        assert cache._disk_key("/s", (), "etl") != key, name
        monkeypatch.setitem(fitcache._STAMPS, f, stamps[f])
    monkeypatch.setitem(fitcache._VERSIONS, "scikit-learn", "0.0")
    assert cache._disk_key("/s", (), "etl") != key


def test_prepare_advice_keeps_a_fit_only_of_the_store_it_was_fitted_on(tmp_path, monkeypatch):
    """The demo fits, then asks to keep that fit: a run committed in between was missing from a
    fit kept as the store's with it, for every later process."""
    import sparkpredict.advice_cache as cache
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_job

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    path = make_store(tmp_path / "s", history(sizes=(10, 20, 40)))
    version = store_mod.open(path).version()
    fitted = fit_job(runs_table(store_mod.open(path)).query("job == 'etl'"), kind="amdahl")
    runs, _ = history(sizes=(80,), seed=1)
    store_mod.open(path).append({"runs": runs.iloc[:1].assign(run_id="app-etl-late", app_id="app-etl-late")})
    cache._CACHE.clear()
    assert cache.prepare_advice(path, ["app-etl-late"], fitted={"etl": fitted}, fitted_version=version) == ["etl"]
    cache._CACHE.clear()
    a = suggest_executors("etl", "30GB", store=path)
    assert a.n_runs == len(history(sizes=(10, 20, 40))[0]) + 1 and a.model_name != "amdahl"


def test_a_model_folder_behind_the_store_given_with_it_says_so(tmp_path):
    """--models DIR --store S: the folder's model answers (as documented), and, as the
    registry's model does, says when the store holds runs it was not fitted on."""
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_job, save_models

    path = make_store(tmp_path / "s", history(sizes=(10, 20, 40)))
    save_models({"etl": fit_job(runs_table(store_mod.open(path)).query("job == 'etl'"), kind="amdahl")},
                tmp_path / "models")
    current = suggest_executors("etl", "30GB", models=tmp_path / "models", store=path)
    assert current.model_name == "amdahl" and not any("fitted on" in w for w in current.warnings)
    runs, _ = history(sizes=(80,), seed=1)
    store_mod.open(path).append({"runs": runs.iloc[:2].assign(run_id=["late-1", "late-2"], app_id=["l1", "l2"])})
    behind = suggest_executors("etl", "30GB", models=tmp_path / "models", store=path)
    (note,) = [w for w in behind.warnings if "the model given was fitted on" in w]
    n = len(history(sizes=(10, 20, 40))[0])
    assert f"fitted on {n} runs of etl, and the store given holds {n + 2} succeeded" in note
    assert behind.model_name == "amdahl" and "models=" in note


def test_a_local_run_beside_cluster_runs_held_its_input_in_one_heap(tmp_path):
    """A job tried on local[8] and run on a cluster: the local run's 8 "executors" are threads of
    the driver's one 4 GiB heap, which held its 160 GB, not 8 heaps. Counted as 8, what ran
    was the cluster runs' 80 GB on one executor (18.63 bytes per byte), where the local run
    held 37.25, and 4 executors were named for 300 GB where 2 hold it within what ran."""
    runs, stages = history()
    runs["master"] = "yarn"
    local_runs, local_stages = history(sizes=(160,), execs=(1,), repeats=1)
    local_runs["run_id"] = local_runs["app_id"] = "local-1700000000000"
    local_stages["run_id"] = "local-1700000000000"
    local_runs["master"], local_runs["executor_cores"], local_runs["task_slots"] = "local[8]", 8, 8
    local_runs["properties_json"] = json.dumps({"spark.master": "local[8]"})
    h = (pd.concat([runs, local_runs], ignore_index=True), pd.concat([stages, local_stages], ignore_index=True))
    path = make_store(tmp_path / "s", h)
    a = suggest_executors("etl", "300GB", store=path, models={"etl": fast_model(h)}, executor_counts=[1])
    (w,) = [x for x in a.warnings if "executor memory" in x]
    held = 160 * GB / (4096 * 2**20)
    assert f"beyond the {held:.2f} that ran without heavy spill" in w, w
    assert ">= 2 executors (or more executor memory) stay within what ran" in w, w
