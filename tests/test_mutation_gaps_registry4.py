"""Behaviours of the model registry (registry.py) that its fourth mutation audit found no test
pinning: the mutants the third audit (tests/test_mutation_gaps_registry3.py) never ran, mostly
module-level names. No JVM, no timings."""
from __future__ import annotations

import pytest

from sparkpredict import registry as R
from sparkpredict import store
from sparkpredict.errors import ModelError


def test_every_name_the_registry_exports_is_there():
    """``from sparkpredict.registry import *`` fails with an AttributeError on a listed name the
    module lacks; docs/stage-models.md and docs/retrain.md cite ``load_stage_models`` and
    ``read_registry_state``. Mutants: each entry of ``__all__`` renamed."""
    assert [name for name in R.__all__ if not hasattr(R, name)] == []
    assert {"load_models", "load_stage_models", "read_registry_state", "KIND_STAGE"} <= set(R.__all__)


def test_a_job_folder_drops_only_the_leading_dots_of_the_jobs_name():
    """docs/retrain.md lays artifacts out as ``<job-slug>-<hash>``: the slug is the job's name,
    less the leading dots that would hide the folder. Mutant: ``lstrip(".")`` -> ``lstrip(".X")``
    (a job named from an uppercase X lost it)."""
    import hashlib

    def h(job):
        return hashlib.sha256(job.encode()).hexdigest()[:10]

    assert R.job_dir("Xetl") == f"Xetl-{h('Xetl')}"
    assert R.job_dir("..Xetl") == f"Xetl-{h('..Xetl')}"


@pytest.mark.parametrize("job, said", [({"job": "etl daily"}, "'etl daily'"), ({}, "'?'")])
def test_an_artifact_file_of_an_older_version_is_refused_naming_the_job_it_holds(tmp_path, job, said):
    """The file's own ``job`` names it, and a file without one is named ``'?'``. Mutants: the
    ``job`` key or the ``'?'`` default of that read moved."""
    st = store.open(tmp_path / "st", create=True)
    doc = {"format": "sparkpredict-model", "artifact_version": R.ARTIFACT_VERSION - 1, **job}
    R.write_artifact(st, "artifacts/old.json", doc)
    with pytest.raises(ModelError) as err:
        R.read_artifact(st, "artifacts/old.json")
    assert err.value.message == (f"the model of job {said} has artifact version {R.ARTIFACT_VERSION - 1}, "
                                 f"older than this sparkpredict's {R.ARTIFACT_VERSION}, and is not loaded")
