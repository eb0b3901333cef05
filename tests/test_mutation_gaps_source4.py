"""Behaviours of sparkpredict/advice_cache.py and advice_source.py that a fourth mutation pass
(where the advice gets its model; 2026-12-07) found no test pinning: what the process cache's
keys hold (a model folder's job and each model file's stamp, a store's path), that the
process cache is kept at all (the disk cache alone hid its loss), that a store's source counts
its local runs as one heap each, and both fixes of a job that neither model can fit. Each test
failed on a one-operator or one-key-part change that every other advice test let pass.

No JVM: stores are written from frames (test_advise_history.history) or copied from
tests/data/history; model folders are fitted equations.
"""
from __future__ import annotations

import pytest
from test_advise_history import history, make_store

import sparkpredict.advice_cache as cache
from sparkpredict import suggest_executors


def test_a_job_neither_model_can_fit_names_both_reasons_and_both_fixes(tmp_path, monkeypatch):
    # one run of one executor count and no task rows: the whole-job model's reason leads (the
    # one the user can act on), and the replay's fix is offered beside its own
    from sparkpredict.errors import DegenerateDataError

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    path = make_store(tmp_path / "s", history(sizes=(10,), execs=(1,), repeats=1))
    cache._CACHE.clear()
    with pytest.raises(DegenerateDataError) as info:
        suggest_executors("etl", "30GB", store=path)
    err = info.value
    assert "; nor can a run be replayed: none of these runs has task rows to replay" in err.message, err.message
    assert err.fix.startswith("record more runs of the job"), err.fix
    assert err.fix.endswith(", or record with spark.sparkpredict.tasks=true or ingest event logs"), err.fix


def test_a_model_file_copied_over_in_place_answers_in_the_same_process(tmp_path):
    # the index stays as it was: only the model file's own stamp in the folder cache's key
    # tells this process that another model now answers for the job
    import shutil

    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_job, read_index, save_models

    runs = runs_table(history(sizes=(10, 20, 40))[0])
    for kind in ("amdahl", "gustafson"):
        save_models({"etl": fit_job(runs, kind=kind)}, tmp_path / kind)
    before = suggest_executors("etl", "30GB", models=tmp_path / "amdahl")
    name = read_index(tmp_path / "amdahl")["jobs"]["etl"]
    index = (tmp_path / "amdahl" / "sparkpredict_models.json").read_bytes()
    shutil.copyfile(tmp_path / "gustafson" / name, tmp_path / "amdahl" / name)
    assert (tmp_path / "amdahl" / "sparkpredict_models.json").read_bytes() == index
    after = suggest_executors("etl", "30GB", models=tmp_path / "amdahl")
    assert (before.model_name, after.model_name) == ("amdahl", "gustafson")


def test_a_fit_of_the_store_counts_a_local_run_beside_cluster_runs_as_one_heap(tmp_path, monkeypatch):
    # test_advise_history's local[8] run beside yarn runs, advised from the store alone: the
    # store's source names its local runs as a model given with the store does, so the 160 GB
    # local run held 37.25 bytes per byte of its one heap, not 4.66 over 8 "executors"
    import json

    import pandas as pd
    from test_advise_history import GB

    from sparkpredict.models.persist import fit_job

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "_fit", lambda runs, st: fit_job(runs, kind="amdahl"))  # quick; any fit will do
    runs, stages = history()
    runs["master"] = "yarn"
    local_runs, local_stages = history(sizes=(160,), execs=(1,), repeats=1)
    local_runs["run_id"] = local_runs["app_id"] = local_stages["run_id"] = "local-1700000000000"
    local_runs["master"], local_runs["executor_cores"], local_runs["task_slots"] = "local[8]", 8, 8
    local_runs["properties_json"] = json.dumps({"spark.master": "local[8]"})
    path = make_store(tmp_path / "s", (pd.concat([runs, local_runs], ignore_index=True),
                                       pd.concat([stages, local_stages], ignore_index=True)))
    cache._CACHE.clear()
    a = suggest_executors("etl", "300GB", store=path, executor_counts=[1])
    (w,) = [x for x in a.warnings if "executor memory" in x]
    assert f"beyond the {160 * GB / (4096 * 2**20):.2f} that ran without heavy spill" in w, w
    assert ">= 2 executors (or more executor memory) stay within what ran" in w, w


def test_a_copy_of_a_store_elsewhere_is_advised_as_itself_not_from_the_originals_entry(tmp_path, monkeypatch):
    # a copy that keeps its files' times (cp -a, copytree) has the original's version, batch
    # names and all: only the path in the process cache's key keeps each store's commands its own
    import re
    import shutil

    from test_advice_recovered_runs import _recovery, _with_recovered_run

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    st = _with_recovered_run(tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(st.path, copy)
    from sparkpredict import store as store_mod

    assert store_mod.open(copy).version() == st.version()
    cache._CACHE.clear()
    for path in (st.path, str(copy)):
        (w,) = _recovery(suggest_executors("sort", "16MB", store=path).warnings)
        assert re.search(r"--exclude --store (\S+)`", w).group(1) == path, w


def test_each_job_of_a_model_folder_is_answered_by_its_own_model_in_one_process(tmp_path):
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_job, save_models

    models = {job: fit_job(runs_table(history(job=job, sizes=(10, 20, 40))[0]), kind=kind)
              for job, kind in (("etl", "amdahl"), ("other", "gustafson"))}
    save_models(models, tmp_path / "m")
    asked = [suggest_executors(job, "30GB", models=tmp_path / "m").model_name for job in ("etl", "other", "etl")]
    assert asked == ["amdahl", "gustafson", "amdahl"]


def test_a_second_question_of_an_unchanged_store_reads_its_runs_once(tmp_path, monkeypatch):
    # the process cache keeps the job's source, its runs and warnings with the model: the disk
    # cache alone spares the refit, yet every question read the store's tables again
    from sparkpredict.advice_source import HistorySource

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    path = make_store(tmp_path / "s", history(sizes=(10, 20, 40)))
    cache._CACHE.clear()
    first = suggest_executors("etl", "30GB", store=path)
    monkeypatch.setattr(HistorySource, "_history",
                        staticmethod(lambda *a, **k: pytest.fail("read the runs of an unchanged store again")))
    second = suggest_executors("etl", "31GB", store=path)
    assert (second.model_name, second.n_runs) == (first.model_name, first.n_runs)


def test_a_model_given_with_the_store_keeps_the_stores_note_on_inputs_measured_before_0_3(tmp_path):
    # the note is the store's runs' (Spark 4's Parquet footers counted as the input), whoever
    # fitted the model: a folder's model given with the store gets it as a fit of the store does
    import pandas as pd
    from test_advise_history import fast_model

    old, old_stages = history(sizes=(0.1, 0.2), repeats=1)
    old["run_id"] = old["app_id"] = old_stages["run_id"] = "old-" + old["run_id"]
    new, new_stages = history(sizes=(10, 20, 40), repeats=1)
    h = (pd.concat([old.assign(sparkpredict_version="0.2.0"), new.assign(sparkpredict_version="0.3.0")],
                   ignore_index=True).assign(input_bytes_source="measured"),
         pd.concat([old_stages, new_stages], ignore_index=True))
    path = make_store(tmp_path / "s", h)
    for models in (None, {"etl": fast_model(h)}):
        a = suggest_executors("etl", "30GB", store=path, models=models)
        (note,) = [w for w in a.warnings if "had their input measured by sparkpredict before 0.3.0" in w]
        assert note.startswith("8 runs of etl had their input measured"), note


def test_a_model_given_alone_or_with_a_store_without_the_jobs_runs_says_nothing_of_dynamic_allocation(tmp_path):
    # given beside a model, a store that holds none of the job's runs says nothing of how they
    # ran: the advice does not say that the history used dynamic allocation
    from test_advise_history import fast_model

    path = make_store(tmp_path / "s", history(job="other", sizes=(1, 2), execs=(1, 2)))
    a = suggest_executors("etl", "30GB", store=path, models={"etl": fast_model(history())})
    assert [w for w in a.warnings if "holds no succeeded run of etl" in w]
    assert not [w for w in a.warnings if "the history used dynamic allocation" in w], a.warnings
    # nor does a model given alone, without any store
    alone = suggest_executors("etl", "30GB", models={"etl": fast_model(history())})
    assert not [w for w in alone.warnings if "the history used dynamic allocation" in w], alone.warnings


def test_the_latest_runs_one_core_is_the_default_only_a_zero_is_passed_over():
    from types import SimpleNamespace

    import pandas as pd

    from sparkpredict.advice_source import HistorySource

    def latest(cores):
        runs = pd.DataFrame({"executor_cores": cores, "executor_memory_mb": [1024.0] * len(cores)})
        return HistorySource("etl", SimpleNamespace(), runs).default_column("executor_cores")

    assert latest([4.0, 1.0]) == 1
    assert latest([4.0, 0.0]) == 4
