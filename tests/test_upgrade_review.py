"""Fixes from a review of upgrades: models fitted by older code, read by this one.

On the recorded test history (three jobs recorded by the listener) and a real event log."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sparkpredict import registry as R
from sparkpredict import retrain as RT
from sparkpredict import store, suggest_executors
from sparkpredict.cli import main
from sparkpredict.errors import InputError
from sparkpredict.models.stages import STAGE_FORMAT_VERSION, StageRuntimeModel

HERE = Path(__file__).parent
HISTORY = HERE / "data" / "history"


def _as_if_fitted_by(path: Path, version: str) -> None:
    """Rewrite the current registry snapshot as if an older sparkpredict had fitted its models."""
    snap = path / "_models" / "registry" / R.current_snapshot(path)
    table = pq.read_table(snap)
    meta = table.schema.metadata
    col = table.schema.get_field_index("sparkpredict_version")
    table = table.set_column(col, "sparkpredict_version", [[version] * table.num_rows])
    pq.write_table(table.replace_schema_metadata(meta), snap)


@pytest.fixture()
def retrained(tmp_path):
    path = tmp_path / "store"
    shutil.copytree(HISTORY, path)
    assert main(["retrain", "--store", str(path), "--local"]) == 0
    return path


def test_models_record_the_code_that_fitted_them(retrained):
    reg = R.read_registry(retrained)
    assert set(reg["sparkpredict_version"]) == {R.fitted_by()}
    assert R.fitted_by().startswith("0.") and "+fit." in R.fitted_by()
    row = reg[reg.model_kind == R.KIND_RUNTIME].iloc[0]
    assert R.read_artifact(retrained, row.artifact, row.job)["sparkpredict_version"] == R.fitted_by()


def test_a_model_fitted_by_other_code_is_refit_by_a_plain_retrain_and_not_trusted_by_advice(retrained, capsys):
    """Format numbers stayed 1 while what a model's numbers mean changed: an older stage model
    loaded and predicted 2.4x too low, and a plain retrain said every model was current."""
    capsys.readouterr()
    assert main(["retrain", "--store", str(retrained), "--local", "--dry-run"]) == 0
    assert capsys.readouterr().out.startswith("0 of 3 job(s) would be refit")

    _as_if_fitted_by(retrained, "0.1.0")  # what every model before this change recorded
    a = suggest_executors("sort", "64MB", store=retrained)
    assert "the registry's model of sort is fitted by another sparkpredict (0.1.0; this is " in " ".join(a.warnings)
    assert "from the registry" not in a.model_source
    assert main(["retrain", "--store", str(retrained), "--local", "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "3 of 3 job(s) would be refit on the local path, 3 of them with stage models"
    assert "  sort: its model was fitted by another sparkpredict (other model code)" in out
    assert main(["retrain", "--store", str(retrained), "--local"]) == 0
    assert "why: its model was fitted by another sparkpredict (other model code)" in capsys.readouterr().out
    assert set(R.read_registry(retrained)["sparkpredict_version"]) == {R.fitted_by()}
    assert "from the registry" in suggest_executors("sort", "64MB", store=retrained).model_source


def test_a_stage_model_of_the_format_before_the_per_task_target_is_refused():
    doc = StageRuntimeModel(store=str(HISTORY)).fit(
        __import__("sparkpredict.features.runs", fromlist=["runs_table"]).runs_table(HISTORY)).to_dict()
    assert doc["version"] == STAGE_FORMAT_VERSION == 2
    with pytest.raises(InputError, match="not a stage model of format v2"):
        StageRuntimeModel.from_dict({**doc, "version": 1}, store=str(HISTORY))


def test_a_job_whose_runs_read_nothing_gets_no_stage_model_and_the_others_still_load(tmp_path, capsys):
    """A Spark shell's runs (in-memory data, input 0) got a stage model that failed its own
    check at every load, and load_stage_models() of the whole store failed with it."""
    from sparkpredict.capture.eventlog_ingest import ingest_event_logs

    path = tmp_path / "store"
    shutil.copytree(HISTORY, path)
    ingest_event_logs([HERE / "data" / "eventlogs" / "eventlog_4nodes_8cores_dynamic_alloc.zstd"], path)
    shell = store.open(path).runs().query("job == 'Spark shell'")
    assert len(shell) == 1 and int(shell["input_bytes"].iloc[0]) == 0
    res = RT.retrain_local(str(path))
    assert "Spark shell" in res.stage_skipped and "Spark shell" not in res.stage_refit
    models = R.load_stage_models(path)
    assert set(models) == {"sort", "sqljoin", "wordcount"}
    assert json.loads(json.dumps(sorted(models)))  # loaded, every one


def _as_if_ingested_by(path: Path, version: str, input_bytes: int) -> None:
    """Rewrite the store's runs rows as an older ingest wrote them (another measured input)."""
    for f in (path / "runs").glob("part-*.parquet"):
        table = pq.read_table(f)
        meta = table.schema.metadata
        for name, value in (("sparkpredict_version", version), ("input_bytes", input_bytes)):
            i = table.schema.get_field_index(name)
            table = table.set_column(i, table.schema.field(i), [[value] * table.num_rows])
        pq.write_table(table.replace_schema_metadata(meta), f)


def test_a_log_ingested_by_an_older_sparkpredict_is_measured_again(tmp_path):
    """The input-counting rules changed (map stages once across jobs, Databricks disk-cache
    hits), and a log stored by an older ingest was 'unchanged' forever, with its old size."""
    from sparkpredict.capture.eventlog_ingest import ingest_event_logs

    log = HERE / "data" / "eventlogs" / "aqe_executors_killed_spark4.zstd"
    path = tmp_path / "store"
    first = ingest_event_logs([log], path)
    rid = first.files[0].run_id
    right = int(store.open(path).runs()["input_bytes"].iloc[0])
    assert right == 41_460
    _as_if_ingested_by(path, "0.1.0", 2 * right)

    again = ingest_event_logs([log], path)
    f = again.files[0]
    assert (f.outcome, f.run_id) == ("ingested", rid)
    assert f.replaced is not None and f.replaced.endswith("measured by sparkpredict 0.1.0"), f.replaced
    runs = store.open(path).runs()
    assert len(runs) == 1 and int(runs["input_bytes"].iloc[0]) == right
    assert runs["sparkpredict_version"].iloc[0] == __import__("sparkpredict").__version__
    assert len(store.open(path).read("stages", run_ids=[rid])) == first.files[0].stages  # one copy of its rows
    assert ingest_event_logs([log], path).files[0].outcome == "unchanged"

    # merged by a compaction with another run, the old copy cannot be replaced: the skip says
    # so and names the fixes
    ingest_event_logs([HERE / "data" / "eventlogs" / "nds_q72_dataproc_2_2.zstd"], path, compact=False)
    _as_if_ingested_by(path, "0.1.0", 2 * right)
    from sparkpredict.store.compact import compact

    compact(str(path), keep_s=0)
    f = ingest_event_logs([log], path).files[0]
    assert f.outcome == "exists", f
    said = " ".join(f.warnings)
    assert "measured by sparkpredict 0.1.0" in said and "store compact" in said
    assert "--input-size" in said and "fresh store" in said
