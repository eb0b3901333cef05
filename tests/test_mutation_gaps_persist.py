"""Behaviours of saved models and caches that a mutation audit found no test pinning: the
pickle cache's ownership check, a forest document's damage checks and its exact comparisons,
the advice cache's key (store path, job) and the registry's notion of "current"."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest


# ---- fitcache: a pickle entry is loaded only from a file of this user's that others cannot write --
def test_a_pickle_entry_is_loaded_only_when_this_user_owns_it_and_others_cannot_write_it(tmp_path, monkeypatch):
    from sparkpredict import fitcache

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(fitcache, "_PRUNED", set())  # this process's record of kinds pruned stays as it was
    fitcache.write("monitor", "k", "pkl", lambda f: f.write(b"mine"))
    path = fitcache.entry_path("monitor", "k", "pkl")
    os.chmod(path, 0o644)
    assert fitcache.read("monitor", "k", "pkl", lambda f: f.read(), own_only=True) == b"mine"
    os.chmod(path, 0o666)  # anyone may have replaced it: a pickle would run their code
    assert fitcache.read("monitor", "k", "pkl", lambda f: f.read(), own_only=True) is None
    assert fitcache.read("monitor", "k", "pkl", lambda f: f.read()) == b"mine"  # JSON entries: no such risk
    os.chmod(path, 0o664)  # group-writable is a umask 002's everyday file
    assert fitcache.read("monitor", "k", "pkl", lambda f: f.read(), own_only=True) == b"mine"
    if hasattr(os, "getuid") and os.getuid() == 0:  # root can hand the file to another user
        os.chown(path, os.getuid() + 4242, -1)
        os.chmod(path, 0o644)
        assert fitcache.read("monitor", "k", "pkl", lambda f: f.read(), own_only=True) is None




def test_entries_unused_for_thirty_days_are_removed_by_the_next_write_of_their_kind(tmp_path, monkeypatch):
    """docs/advice.md: entries unused for 30 days are removed as new ones are written."""
    import time

    from sparkpredict import fitcache

    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(fitcache, "_PRUNED", set())
    folder = tmp_path / "cache" / "advice"
    folder.mkdir(parents=True)
    now = time.time()
    for name, days in (("month.json", 30.5), ("recent.json", 29.5)):
        (folder / name).write_text("{}")
        os.utime(folder / name, (now - days * 86400,) * 2)
    fitcache.write("other-kind", "k", "json", lambda f: f.write(b"{}"))  # prunes its own kind only
    assert sorted(p.name for p in folder.iterdir()) == ["month.json", "recent.json"]
    fitcache.write("advice", "k", "json", lambda f: f.write(b"{}"))
    assert sorted(p.name for p in folder.iterdir()) == ["k.json", "recent.json"]


def test_a_model_file_that_cannot_be_read_hashes_no_code(monkeypatch):
    """A zipped package lists the models' files but reads none: the hash must then say
    ``unknown`` (judged by release alone), not a hash of the names, which differed from the
    installed CLI's hash of the same code."""
    from pathlib import Path

    from sparkpredict import fitcache

    real = fitcache.fit_code_files()
    monkeypatch.setattr(fitcache, "_STAMPS", {})
    monkeypatch.setattr(fitcache, "_FIT_CODE_HASH", [])
    assert len(fitcache.fit_code_hash()) == 12 and fitcache.fit_code_hash() != "unknown"
    zipped = Path("/nowhere/pkg.zip/sparkpredict/models/hybrid.py")
    monkeypatch.setattr(fitcache, "fit_code_files", lambda: [*real, zipped])
    monkeypatch.setattr(fitcache, "_FIT_CODE_HASH", [])
    assert fitcache.fit_code_hash() == "unknown"
    # the stamp of a file not there still names it, and the release leads the stamps
    assert fitcache.code_stamp(zipped)[1:] == ["hybrid.py:unreadable"]
    from sparkpredict import __version__

    assert fitcache.code_stamp()[0] == __version__


# ---- forest_json: exact comparisons, and a damaged document refused before it predicts ----------
def _stump(**change):
    """One split on feature 0 at 1.0: left leaf 10, right leaf 20 (scikit-learn's layout)."""
    tree = {"left": [1, -1, -1], "right": [2, -1, -1], "feature": [0, -2, -2],
            "threshold": [1.0, -2.0, -2.0], "value": [15.0, 10.0, 20.0]}
    tree.update(change)
    return {"format": "sparkpredict.forest", "version": 1, "n_features": 1, "trees": [tree],
            "oob_prediction": None}


def test_a_value_at_a_threshold_goes_left_on_float32_inputs_as_scikit_learn_does():
    from sklearn.ensemble import RandomForestRegressor

    from sparkpredict.models.forest_json import forest_from_dict, forest_to_dict

    forest = forest_from_dict(_stump())
    # 1.0 itself goes left (x <= threshold); so does the next double above it, which is 1.0 as
    # the float32 scikit-learn compares; 1.001 does not
    X = np.array([[1.0], [np.nextafter(1.0, 2.0)], [1.001], [0.0]])
    assert forest.predict(X).tolist() == [10.0, 10.0, 20.0, 10.0]

    # the same of a real forest: its thresholds are midpoints of the training values
    Xt = np.array([[0.0], [1.0], [2.0], [3.0]])
    rf = RandomForestRegressor(n_estimators=3, bootstrap=False, random_state=0).fit(Xt, [0.0, 1.0, 2.0, 3.0])
    back = forest_from_dict(json.loads(json.dumps(forest_to_dict(rf))))
    Xq = np.array([[0.5], [1.5], [2.5], [0.5 + 1e-9], [1.5 - 1e-9], [2.5 + 1e-9], [2.5 + 1e-6]])
    assert rf.predict(Xq).tolist() == [0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 3.0]  # the boundary cases it pins
    assert back.predict(Xq).tolist() == rf.predict(Xq).tolist()
    assert back.oob_prediction_ is None


@pytest.mark.parametrize(("change", "match"), [
    ({"value": [15.0, 10.0]}, "empty or of unequal length"),
    ({"left": [], "right": [], "feature": [], "threshold": [], "value": []}, "empty or of unequal length"),
    ({"left": [0, -1, -1]}, "child index is out of range"),        # a node its own child: a loop
    ({"right": [0, -1, -1]}, "child index is out of range"),
    ({"left": [3, -1, -1]}, "child index is out of range"),        # past the last node
    ({"right": [3, -1, -1]}, "child index is out of range"),
    ({"right": [-1, -1, -1]}, "child index is out of range"),      # a split with one child
    ({"right": [2, 0, -1]}, "child index is out of range"),        # a leaf with one child
    ({"feature": [1, -2, -2]}, "reads a feature outside the model's 1"),
    ({"feature": [-1, -2, -2]}, "reads a feature outside the model's 1"),
    ({"threshold": [float("nan"), -2.0, -2.0]}, "not a finite number"),
    ({"value": [15.0, float("inf"), 20.0]}, "not a finite number"),
])
def test_a_damaged_tree_is_refused_when_read(change, match):
    from sparkpredict.models.forest_json import forest_from_dict

    with pytest.raises(ValueError, match=match):
        forest_from_dict(_stump(**change))


def test_a_split_node_may_hold_any_value_and_a_leaf_any_threshold():
    """scikit-learn keeps -2 as a leaf's threshold and feature, and a mean at a split: only what a
    walk reads (a split's threshold and feature, a leaf's value) is checked."""
    from sparkpredict.models.forest_json import forest_from_dict

    forest = forest_from_dict(_stump(threshold=[1.0, float("nan"), -2.0], value=[float("nan"), 10.0, 20.0]))
    assert forest.predict(np.array([[0.0], [5.0]])).tolist() == [10.0, 20.0]


def test_a_forest_of_another_format_width_or_size_is_refused():
    from sparkpredict.models.forest_json import forest_from_dict

    for other in ({"version": 2}, {"format": "sklearn"}):
        with pytest.raises(ValueError, match="not a sparkpredict.forest v1 document"):
            forest_from_dict({**_stump(), **other})
    assert forest_from_dict(_stump(), n_features=1, n_trees=1).n_features_in_ == 1
    with pytest.raises(ValueError, match="reads 1 features, the model 2"):
        forest_from_dict(_stump(), n_features=2)
    with pytest.raises(ValueError, match="holds 1 trees, not 2"):
        forest_from_dict(_stump(), n_trees=2)
    with pytest.raises(ValueError, match="holds 0 trees, not one or more"):
        forest_from_dict({**_stump(), "trees": []})


# ---- the registry: a commit never names an artifact that is not there ----------------------------
@pytest.fixture
def reg_store(tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from retrain_scaling import make_history, write_history

    from sparkpredict import store

    write_history(tmp_path / "store", make_history(2, runs_per_job=12, seed=3), batches=1)
    return store.open(tmp_path / "store")


def _reg_row(st, job, retrain_id, version=1):
    """One artifact of ``job`` written, and its registry row as a retrain's commit makes it."""
    from sparkpredict import registry as R

    rel = R.artifact_relpath(job, R.KIND_RUNTIME, version, retrain_id)
    R.write_artifact(st, rel, R.make_artifact(job, R.KIND_RUNTIME, {"version": 1}, trained_on="fp"))
    return {"job": job, "model_kind": R.KIND_RUNTIME, "signature": "", "version": version, "trained_on": "fp",
            "artifact": rel, "retrain_id": retrain_id, "registry_version": R.REGISTRY_VERSION}


def test_a_commit_whose_artifact_vanished_is_refused_and_changes_nothing(reg_store):
    """`store clean --older-than 0` during a retrain removes its artifacts before the commit: a
    row naming one would leave the registry's model unloadable for every reader."""
    from sparkpredict import registry as R
    from sparkpredict import registry_commit as RC
    from sparkpredict.errors import StoreError

    st = reg_store
    first = RC.commit_update(st, [_reg_row(st, "a-job", R.new_retrain_id())], "r1")
    rid = R.new_retrain_id()
    gone = _reg_row(st, "b-job", rid)
    os.remove(f"{st.root}/_models/{gone['artifact']}")
    with pytest.raises(StoreError, match="1 model artifact\\(s\\) of retrain r2 vanished before its commit"):
        RC.commit_update(st, [gone, _reg_row(st, "c-job", rid)], "r2")
    assert R.current_snapshot(st) == first
    assert sorted(R.read_registry(st).job) == ["a-job"]


def test_an_emptied_artifact_is_refit_by_a_plain_retrain_and_one_of_another_model_format_names_retrain(reg_store):
    """An artifact cut to nothing (a full disk at its write, a copy that failed) counts as
    missing: the next plain retrain refits its job, as it does a deleted one. An artifact whose
    model has another format version is refused with the fix that refits it (a plain retrain,
    which refits models of another format), not a `--force` refit of a damaged file."""
    from pathlib import Path

    from sparkpredict import registry as R
    from sparkpredict import retrain as RT
    from sparkpredict.errors import ModelError

    st = reg_store
    RT.retrain_local(st.path, kind="amdahl")
    reg = R.read_registry(st).sort_values("job")
    assert len(reg) == 2
    models = Path(st.root) / R.MODELS_DIR
    emptied, other = reg.artifact.iloc[0], reg.artifact.iloc[1]
    (models / emptied).write_bytes(b"")
    assert emptied not in R.present_artifacts(st) and other in R.present_artifacts(st)
    assert RT.retrain_local(st.path, kind="amdahl").refit == [reg.job.iloc[0]]

    doc = json.loads((models / other).read_text())
    doc["model"]["version"] = 99
    (models / other).write_text(json.dumps(doc))
    with pytest.raises(ModelError, match="has model format version 99; this sparkpredict reads 1") as err:
        R.load_models(st, jobs=[reg.job.iloc[1]])
    assert err.value.fix == f"run `sparkpredict retrain --store {st.path}`: it refits models of another format"


# ---- models/persist: a folder of `sparkpredict fit` models --------------------------------------
@pytest.fixture
def two_models(reg_store):
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_all

    models = fit_all(runs_table(reg_store), kind="amdahl")
    assert sorted(models) == ["job-00000", "job-00001"]
    return models


def test_a_job_fitted_since_it_was_skipped_is_no_longer_listed_as_skipped(two_models, tmp_path):
    from sparkpredict.models.persist import load_models, read_index, save_models

    d = tmp_path / "m"
    save_models({"job-00000": two_models["job-00000"]}, d, skipped={"job-00001": "only 3 usable runs"})
    assert read_index(d)["skipped"] == {"job-00001": "only 3 usable runs"}
    save_models({"job-00001": two_models["job-00001"]}, d)
    index = read_index(d)
    assert index["skipped"] == {} and sorted(index["jobs"]) == ["job-00000", "job-00001"]
    assert sorted(load_models(d)) == ["job-00000", "job-00001"]


@pytest.mark.parametrize(("column", "bounds", "said"), [
    ("input_bytes", [0.0, 8589934592.0], "its training range of input_bytes starts at 0.0, not above zero"),
    ("executors", [-1.0, 16.0], "its training range of executors starts at -1.0, not above zero"),
    ("executors", [16.0, 2.0], "its training range of executors is \\[16.0, 2.0\\]"),
    ("input_bytes", [float("nan"), 8589934592.0], "its training range of input_bytes is \\[nan, "),
])
def test_a_model_file_with_an_impossible_training_range_is_refused_naming_it(two_models, tmp_path, column, bounds, said):
    """A file edited by hand loads field by field: its training range is checked before it
    advises, since a size range from 0 has no middle to predict at, nor a reversed one."""
    from sparkpredict.errors import ModelError
    from sparkpredict.models.persist import load_models, read_index, save_models

    d = tmp_path / "m"
    save_models(two_models, d)
    f = d / read_index(d)["jobs"]["job-00000"]
    doc = json.loads(f.read_text())
    doc["training_range"][column] = bounds
    f.write_text(json.dumps(doc))
    with pytest.raises(ModelError, match=f"model file .*{f.name}' is corrupt: {said}"):
        load_models(d, jobs=["job-00000"])
    assert list(load_models(d, jobs=["job-00001"])) == ["job-00001"]  # the other job's file still loads


# ---- advice_cache: which kept fit answers ------------------------------------------------------
def _advise(job, path):
    from sparkpredict import suggest_executors

    a = suggest_executors(job, "6GiB", deadline_s=600, store=path)
    return a.model_name, a.executors, a.predicted_runtime_s, a.n_runs


def test_each_jobs_fit_is_kept_apart_on_disk(reg_store, tmp_path, monkeypatch):
    """Two jobs of one store, one store version: the second job's advice, in a new process,
    must come from its own fit, not from the first job's kept on disk."""
    import shutil

    import sparkpredict.advice_cache as cache

    path = reg_store.path
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    cache._CACHE.clear()
    alone = _advise("job-00001", path)
    shutil.rmtree(tmp_path / "cache")
    cache._CACHE.clear()
    first = _advise("job-00000", path)
    cache._CACHE.clear()  # a new process: the disk cache answers
    assert _advise("job-00001", path) == alone != first
    assert len(list((tmp_path / "cache" / "advice").glob("*.json"))) == 2


def test_a_fit_handed_to_prepare_advice_answers_the_next_suggest_of_the_same_store(reg_store, tmp_path, monkeypatch):
    """The demo fits, then keeps that fit for the next `sparkpredict suggest` (no refit): kept
    under the key a suggest looks up, store version and registry snapshot included."""
    import sparkpredict.advice_cache as cache
    from sparkpredict.features.runs import runs_table
    from sparkpredict.models.persist import fit_job

    path = reg_store.path
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))
    fitted = fit_job(runs_table(reg_store).query("job == 'job-00000'"), kind="gustafson")
    cache._CACHE.clear()
    run_id = reg_store.runs().query("job == 'job-00000'")["run_id"].iloc[0]
    assert cache.prepare_advice(path, [run_id], fitted={"job-00000": fitted},
                                fitted_version=reg_store.version()) == ["job-00000"]
    cache._CACHE.clear()
    assert _advise("job-00000", path)[0] == fitted.name_ == "gustafson"
    assert len(list((tmp_path / "cache" / "advice").glob("*.json"))) == 1


def test_a_commit_is_named_after_a_snapshot_from_a_clock_ahead_so_it_becomes_current(reg_store):
    """Two writers' clocks disagree: a snapshot named an hour ahead by one of them must not
    stay the current one over a later commit of the other (readers take the highest name)."""
    import time

    from sparkpredict import registry as R
    from sparkpredict import registry_commit as RC

    st = reg_store
    first = RC.commit_update(st, [_reg_row(st, "a-job", R.new_retrain_id())], "r1")
    ahead_ms = int(time.time() * 1000) + 3600_000
    folder = f"{st.root}/_models/registry"
    ahead = f"part-{ahead_ms:013d}-{first[len('part-') + 14:]}"
    os.rename(f"{folder}/{first}", f"{folder}/{ahead}")
    assert RC._name_ms(ahead) == ahead_ms and RC._name_ms("part-x.parquet") == 0
    second = RC.commit_update(st, [_reg_row(st, "b-job", R.new_retrain_id())], "r2")
    assert second == f"part-{ahead_ms + 1:013d}-r2.parquet" == R.current_snapshot(st)
    assert sorted(R.read_registry(st).job) == ["a-job", "b-job"]


def test_store_clean_lists_only_old_leftovers_of_sparkpredicts_own_writes(reg_store):
    """Unreferenced artifacts and hidden .tmp files are leftovers only once older than the
    age asked for (a retrain may be writing them now); files sparkpredict never writes (a
    `.gitkeep`, a note) in the registry folder are not its to remove."""
    import time

    from sparkpredict import registry as R
    from sparkpredict import registry_commit as RC

    st = reg_store
    RC.commit_update(st, [_reg_row(st, "a-job", R.new_retrain_id())], "r1")
    base = f"{st.root}/_models"
    loose = _reg_row(st, "b-job", R.new_retrain_id())["artifact"]  # never committed
    for name in ("registry/.part-1.parquet.ab12cd34.tmp", "registry/.gitkeep", "registry/notes.tmp"):
        with open(f"{base}/{name}", "w") as f:
            f.write("x")
    assert RC.orphans(st, min_age_s=600) == []  # all of them young
    old = time.time() - 3600
    for dirpath, _, files in os.walk(base):
        for f in files:
            os.utime(os.path.join(dirpath, f), (old, old))
    assert RC.orphans(st, min_age_s=600) == sorted([f"{base}/{loose}", f"{base}/registry/.part-1.parquet.ab12cd34.tmp"])


def test_an_artifacts_folder_names_its_job_readably_and_never_hidden():
    import hashlib

    from sparkpredict import registry as R

    def h(job):
        return hashlib.sha256(job.encode()).hexdigest()[:10]

    assert R.job_dir("etl.daily") == f"etl.daily-{h('etl.daily')}"
    assert R.job_dir("a/b c") == f"a_b_c-{h('a/b c')}"
    assert R.job_dir("..") == f"job-{h('..')}"  # not a hidden folder, nor the parent
    assert R.job_dir("x" * 80) == f"{'x' * 60}-{h('x' * 80)}"


def test_load_artifacts_of_one_kind_gives_that_kinds_documents_only(reg_store):
    from sparkpredict import registry as R
    from sparkpredict import registry_commit as RC

    st = reg_store
    rid = R.new_retrain_id()
    stage_rel = R.artifact_relpath("a-job", R.KIND_STAGE, 1, rid)
    R.write_artifact(st, stage_rel, R.make_artifact("a-job", R.KIND_STAGE, {"version": 7}))
    stage_row = {**_reg_row(st, "a-job", rid), "model_kind": R.KIND_STAGE, "artifact": stage_rel}
    RC.commit_update(st, [_reg_row(st, "a-job", rid), stage_row], rid)
    assert set(R.load_artifacts(st)) == {("a-job", "runtime", ""), ("a-job", "stage", "")}
    stage = R.load_artifacts(st, kind=R.KIND_STAGE)
    assert list(stage) == [("a-job", "stage", "")] and stage["a-job", "stage", ""]["model"] == {"version": 7}


def test_models_of_a_foreign_index_are_not_carried_into_the_new_one(two_models, tmp_path):
    """A folder whose index file is not sparkpredict's (another format) is replaced: the jobs it
    names, even with files of our name pattern beside it, are not listed as ours."""
    from sparkpredict.models.persist import INDEX, load_models, read_index, save_models

    d = tmp_path / "m"
    d.mkdir()
    (d / INDEX).write_text(json.dumps({"format": "someone-elses", "version": 1, "jobs": {"x": "job-x-1.json"}}))
    (d / "job-x-1.json").write_text("{}")
    save_models({"job-00000": two_models["job-00000"]}, d)
    assert list(read_index(d)["jobs"]) == ["job-00000"]
    assert list(load_models(d)) == ["job-00000"]


def test_only_a_stores_own_models_folder_is_named_its_registry(reg_store, tmp_path):
    """A folder given for `fit` models that is the store's `_models` is named the store's registry;
    any other folder inside a store, or a `_models` folder outside one, is just a folder
    without models."""
    from sparkpredict.errors import InputError
    from sparkpredict.models.persist import read_index

    root = reg_store.root
    os.makedirs(f"{root}/_models", exist_ok=True)
    with pytest.raises(InputError, match="is the model registry of a history store"):
        read_index(f"{root}/_models")
    for other in (f"{root}/notes", str(tmp_path / "elsewhere" / "_models")):
        os.makedirs(other)
        with pytest.raises(InputError, match="no sparkpredict models in"):
            read_index(other)
