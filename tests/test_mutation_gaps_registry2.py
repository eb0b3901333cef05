"""Behaviours of the model registry (registry.py, registry_commit.py) that its second mutation
audit found no test pinning. The first audit (tests/test_mutation_gaps_registry.py) ran a sample;
this one generated every one-operator mutant of both modules (comparisons and arithmetic swapped,
constants moved, ``and``/``or`` swapped, ``not`` dropped, guards and call statements dropped,
returns of None, and, in the checks added since, each argument of a call replaced by None),
ran those of ``restore_runtime_model``, ``_checked_snapshot`` and ``_SNAPSHOT_FIX`` first and then
a seeded shuffle of the rest against the registry's JVM-free tests, and pins here what the
survivors showed unpinned: a snapshot row without a model kind, a snapshot value its column's
type cannot hold, the job a row of another artifact version is refused for, the hidden file of
an artifact write whose rename fails, and a failed-fit record of numpy scalars. Real stores, Parquet
snapshots and artifacts under tmp_path, written as a retrain writes them (``_reg_row``); no JVM,
no timings."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_damaged_store import _rewrite, _set
from test_mutation_gaps_persist import _reg_row

from sparkpredict import registry as R
from sparkpredict import registry_commit as RC
from sparkpredict import store
from sparkpredict.errors import ModelError, StoreError


@pytest.fixture
def st(tmp_path):
    return store.open(tmp_path / "st", create=True)


# ---- reading: a damaged snapshot ----------------------------------------------------------------
def test_a_snapshot_row_without_a_model_kind_is_refused_as_damaged(st):
    """A row's kind is part of the registry's key (job, kind, signature) and what each loader
    selects its rows by: a row without one is damage, refused with the snapshot fallback as a row
    without a job or a version is, not a row no loader selects and the next commit merges on."""
    name = RC.commit_update(st, [_reg_row(st, "a-job", R.new_retrain_id())], "r1")
    path = f"{st.root}/_models/registry/{name}"
    _rewrite(path, _set("model_kind", lambda t: pa.array([None] * t.num_rows, pa.string())))
    assert pq.read_table(path).column("model_kind").null_count == 1
    with pytest.raises(StoreError) as err:
        R.read_registry(st)
    assert err.value.message == f"registry snapshot {path!r} is damaged: row(s) without a value in model_kind"
    assert err.value.fix == "delete that file to fall back to the previous snapshot, then retrain"



def test_a_snapshot_column_whose_values_do_not_fit_its_type_is_refused_not_truncated(st):
    """A version of 1.5 (a float column, another tool's) is not version 1: a cast that loses part
    of a value is damage, refused with the snapshot fallback, where a float column of whole
    numbers is read as the integers it holds."""
    name = RC.commit_update(st, [_reg_row(st, "a-job", R.new_retrain_id())], "r1")
    path = f"{st.root}/_models/registry/{name}"
    _rewrite(path, _set("version", lambda t: pa.array([1.0] * t.num_rows, pa.float64())))
    assert R.read_registry(st).version.tolist() == [1]
    _rewrite(path, _set("version", lambda t: pa.array([1.5] * t.num_rows, pa.float64())))
    with pytest.raises(StoreError, match="a column is not of the type sparkpredict writes") as err:
        R.read_registry(st)
    assert err.value.fix == "delete that file to fall back to the previous snapshot, then retrain"


# ---- writing: an artifact whose rename fails -----------------------------------------------------
def test_an_artifact_whose_rename_fails_is_refused_and_leaves_no_hidden_file(st):
    """The artifact is written under a hidden name and renamed: where the rename fails (a folder
    in the artifact's place) the write is refused with the store's fix, and its hidden file is
    deleted, not left for `store clean` to find."""
    rel = R.artifact_relpath("a-job", R.KIND_RUNTIME, 1, R.new_retrain_id())
    folder, name = f"{st.root}/_models/{rel}".rsplit("/", 1)
    os.makedirs(f"{folder}/{name}/in-the-way")
    with pytest.raises(StoreError, match="cannot write model artifact to store .*Is a directory") as err:
        R.write_artifact(st, rel, R.make_artifact("a-job", R.KIND_RUNTIME, {"version": 1}))
    assert err.value.fix == "choose a writable store, or fix its permissions"
    assert os.listdir(folder) == [name]


# ---- committing: failed-fit records ---------------------------------------------------------------
def test_a_failed_fit_record_of_numpy_scalars_is_committed_with_their_values(st):
    """A record's numbers taken from a pandas row are numpy scalars, which JSON cannot write: the
    record in the snapshot's footer holds their values (what the next retrain compares), not
    nulls."""
    rec = {"job": "c-job", "model_kind": R.failed_kind(R.KIND_RUNTIME), "signature": "", "version": np.int64(2),
           "trained_at_ms": np.int64(5), "trained_on": "fp-c", "trained_on_rows": np.int64(3),
           "cv_mape": np.float64(0.25), "artifact": None, "retrain_id": "r1",
           "registry_version": R.REGISTRY_VERSION, "error": "boom"}
    RC.commit_update(st, [rec], "r1")
    _, failures = R.read_registry_state(st)
    got = failures[("c-job", R.KIND_RUNTIME)]
    assert (got["version"], got["trained_at_ms"], got["trained_on_rows"], got["cv_mape"]) == (1, 5, 3, 0.25)
    assert type(got["trained_at_ms"]) is int


# ---- loading: a registry row's artifact version ---------------------------------------------------
_NEWER = ("the model of job 'a-job' was written by a newer sparkpredict (artifact version 2; this one reads 1)",
          "upgrade sparkpredict")
_OLDER = ("the model of job 'a-job' has artifact version 0, older than this sparkpredict's 1, and is not loaded",
          "run `sparkpredict retrain --store {path}`: it refits jobs whose models are of an older format")


@pytest.mark.parametrize("version, said, fix", [(R.ARTIFACT_VERSION + 1, *_NEWER), (R.ARTIFACT_VERSION - 1, *_OLDER)])
def test_a_registry_row_of_another_artifact_version_is_refused_naming_its_job(st, version, said, fix):
    """The row's artifact version is judged before its file is read (the file here is of this
    version): the refusal names the job the row is of, which the user refits or upgrades for."""
    rid = R.new_retrain_id()
    row = {**_reg_row(st, "a-job", rid), "artifact_version": version}
    RC.commit_registry(st, pd.DataFrame([row]), rid)
    with pytest.raises(ModelError) as err:
        R.load_models(st, "a-job")
    assert err.value.message == said
    assert err.value.fix == fix.format(path=st.path)


@pytest.mark.parametrize("fix, want", [("restore the store's folder from a backup", "restore the store's folder from a backup"),
                                       (None, "refit it: `sparkpredict retrain --store")])
def test_a_loaders_other_error_keeps_its_kind_and_its_own_fix_else_gets_the_refit(st, fix, want):
    """An error of another kind than a damaged model's (a StoreError from a stage model's store)
    keeps its class, so a caller may tell them apart, and its own fix; without one it gets the
    refit, as a damaged model does; either way its message names the artifact and the job."""
    from types import SimpleNamespace

    def load(doc):
        raise StoreError("the store went away", fix)

    row = SimpleNamespace(artifact="artifacts/sort-1/runtime.json", job="sort")
    with pytest.raises(StoreError) as err:
        R._restore(load, {"model": {}}, row, st)
    assert type(err.value) is StoreError
    assert err.value.message == "model artifact 'artifacts/sort-1/runtime.json' of job 'sort': the store went away"
    assert err.value.fix.startswith(want)
