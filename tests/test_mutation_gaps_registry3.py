"""Behaviours of the model registry (registry.py) that its third mutation audit found no test
pinning. The audit generated every one-operator mutant of the module (comparisons, arithmetic,
constants and short strings moved, ``and``/``or`` swapped, ``not`` dropped, statements dropped,
functions returning None first), ran an even sample across its functions against the registry's
JVM-free tests (tests/test_registry.py without its Spark test, test_damaged_models.py,
test_mutation_gaps_persist.py, test_mutation_gaps_registry*.py), checked each survivor against the
other JVM-free tests that exercise it, and pins here what none did. Real stores and artifacts
under tmp_path, written as a retrain writes them (``_reg_row``); no JVM, no timings."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from test_mutation_gaps_persist import _reg_row

from sparkpredict import __version__, store
from sparkpredict import registry as R
from sparkpredict.store import schema as S


@pytest.fixture
def st(tmp_path):
    return store.open(tmp_path / "st", create=True)


# ---- artifacts: the document one file holds --------------------------------------------------------
def test_an_artifact_holds_the_documented_fields_and_reads_back_as_written(st):
    """The artifact's JSON layout is what ARTIFACT_VERSION versions (docs/retrain.md: each carries
    its formats' versions): a field renamed or dropped without a version bump would be read by
    an older sparkpredict as this layout. The rows count from a pandas column (a numpy integer,
    which JSON cannot write) is stored as its int. Mutants: each key of ``make_artifact``'s
    document renamed, the rows count's default moved."""
    model = {"version": 3, "kind": "amdahl"}
    doc = R.make_artifact("etl daily", R.KIND_STAGE, model, signature="sig-1", trained_on="fp",
                          trained_on_rows=np.int64(12))
    assert doc == {"format": "sparkpredict-model", "artifact_version": R.ARTIFACT_VERSION,
                   "store_schema_version": S.SCHEMA_VERSION, "sparkpredict_version": R.fitted_by(),
                   "job": "etl daily", "kind": "stage", "signature": "sig-1", "trained_on": "fp",
                   "trained_on_rows": 12, "model_format_version": 3, "model": model}
    assert doc["sparkpredict_version"].startswith(f"{__version__}+fit.")
    bare = R.make_artifact("a-job", R.KIND_RUNTIME, {})  # a whole-job model, its runs not given
    assert (bare["signature"], bare["trained_on"], bare["trained_on_rows"], bare["model_format_version"]) == ("", "", 0, None)
    rel = R.artifact_relpath("etl daily", R.KIND_STAGE, 1, R.new_retrain_id(), signature="sig-1")
    R.write_artifact(st, rel, doc)
    assert R.read_artifact(st, rel, "etl daily") == doc


# ---- present_artifacts: a folder that is not there holds nothing --------------------------------
def test_a_registry_whose_artifacts_folder_is_gone_has_no_artifact_present(st, tmp_path):
    """A missing artifacts folder is known to hold nothing (every row's model is then stale, and
    the next plain retrain refits it), not unknown (None: no row judged by its file, so nothing
    is refit and every load fails). Mutant: ``allow_not_found=True`` -> False in
    ``present_artifacts`` (the missing folder raised FileNotFoundError, taken as not known)."""
    row = _reg_row(st, "a-job", R.new_retrain_id())
    assert R.present_artifacts(st) == {row["artifact"]}
    shutil.rmtree(f"{st.root}/_models/artifacts")
    assert R.present_artifacts(st) == set()
    assert R.present_artifacts(store.open(tmp_path / "fresh", create=True)) == set()


def test_artifacts_that_cannot_be_listed_are_not_known_rather_than_an_error(st):
    """Where the artifacts cannot be listed (here a file stands in the folder's place) which are
    there is not known: None, so that no row is judged stale by its file (an empty set would refit
    every job), and never a bare error from the listing. Mutant: the ``return None`` of
    ``present_artifacts``' OSError branch dropped (an UnboundLocalError escaped)."""
    _reg_row(st, "a-job", R.new_retrain_id())
    shutil.rmtree(f"{st.root}/_models/artifacts")
    with open(f"{st.root}/_models/artifacts", "w") as f:
        f.write("not a folder")
    assert R.present_artifacts(st) is None


# ---- loading: only the stage models asked for ------------------------------------------------------
def test_stage_models_of_the_jobs_asked_for_read_no_other_jobs_artifact(st):
    """``load_stage_models(store, jobs)`` loads those jobs' models only: another job's stage model
    (here a damaged one, which refuses to load) is not read, so it neither costs its load nor
    stops the jobs asked for; asked for every job, that one's damage is named. Mutant: the
    ``reg.job.isin(...)`` filter of ``load_stage_models`` dropped."""
    from sparkpredict import registry_commit as RC
    from sparkpredict.errors import SparkPredictError
    from sparkpredict.models.stages import STAGE_FORMAT_VERSION

    rid = R.new_retrain_id()
    rel = R.artifact_relpath("b-job", R.KIND_STAGE, 1, rid)
    R.write_artifact(st, rel, R.make_artifact("b-job", R.KIND_STAGE, {"version": STAGE_FORMAT_VERSION}))
    stage_row = {**_reg_row(st, "b-job", rid), "model_kind": R.KIND_STAGE, "artifact": rel,
                 "model_format_version": STAGE_FORMAT_VERSION}
    RC.commit_update(st, [_reg_row(st, "a-job", rid), stage_row], rid)
    assert R.load_stage_models(st, "a-job") == {} == R.load_stage_models(st, ["a-job"])
    with pytest.raises(SparkPredictError, match=f"model artifact {rel!r} of job 'b-job'") as err:
        R.load_stage_models(st)
    assert err.value.fix == f"refit it: `sparkpredict retrain --store {st.path} --job b-job --force`"
