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
    assert right == 17_535_944  # the Parquet scan's files
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


def test_an_older_copy_is_never_replaced_by_less_and_a_declared_size_ends_the_re_reading(tmp_path):
    """From a diff review: a cut copy of a log replaced the whole run an older ingest stored, and
    the fix the skip names (store edit --input-size) left the warning, and the re-reading, for ever."""
    from sparkpredict.capture.eventlog_ingest import _StoredRun, ingest_event_logs
    from sparkpredict.store.edit import edit_runs

    q72 = HERE / "data" / "eventlogs" / "nds_q72_dataproc_2_2.zstd"
    path = tmp_path / "store"
    whole = ingest_event_logs([q72], path).files[0]
    _as_if_ingested_by(path, "0.1.0", 123)
    cut = tmp_path / "cut" / "q72.zstd"
    cut.parent.mkdir()
    cut.write_bytes(q72.read_bytes()[:600_000])
    f = ingest_event_logs([cut], path).files[0]
    assert f.outcome == "exists" and f.warnings == []
    runs = store.open(path).runs()
    assert (runs.status.iloc[0], int(runs.num_tasks.iloc[0])) == ("succeeded", whole.tasks)

    # a copy that cannot be replaced (edited): the warning names the fix, and the fix ends it
    edit_runs(str(path), [whole.run_id], job="renamed")
    f = ingest_event_logs([q72], path).files[0]
    assert f.outcome == "exists" and "--input-size" in f.warnings[0]
    edit_runs(str(path), [whole.run_id], input_bytes=5_000)
    f = ingest_event_logs([q72], path).files[0]
    assert (f.outcome, f.warnings) == ("unchanged", [])

    # versions: only a known older release is older
    older = [_StoredRun("succeeded", 1, "eventlog", writer=w).measured_before()
             for w in (None, "0.1.0", "0.1", "0.2.0", "0.3.0", "0.3", "0.3.0+fit.abc", "1.0.0rc1", "dev")]
    assert older == [True, True, True, True, False, False, False, False, False]


def test_a_stage_model_of_an_older_format_that_no_retrain_replaces_leaves_the_others_loading(tmp_path, caplog):
    """From a diff review: a job an older sparkpredict fitted a stage model for, which this one
    skips (its runs read nothing), kept that row: every retrain said "its stage model is behind",
    and load_stage_models() of the store failed with it."""
    from sparkpredict import registry_commit as RC
    from sparkpredict.capture.eventlog_ingest import ingest_event_logs

    path = tmp_path / "store"
    shutil.copytree(HISTORY, path)
    ingest_event_logs([HERE / "data" / "eventlogs" / "eventlog_4nodes_8cores_dynamic_alloc.zstd"], path)
    RT.retrain_local(str(path))
    # the row an older sparkpredict left: a stage model of format 1 for the shell's job
    reg = R.read_registry(path)
    row = reg[(reg.job == "sort") & (reg.model_kind == R.KIND_STAGE)].iloc[0].to_dict()
    RC.commit_update(store.open(path), [{**row, "job": "Spark shell", "model_format_version": 1}],
                     R.new_retrain_id())
    assert "Spark shell" in RT.plan(str(path))[0]
    with caplog.at_level("WARNING"):
        assert set(R.load_stage_models(path)) == {"sort", "sqljoin", "wordcount"}
    assert "stage models of another format left out (Spark shell)" in caplog.text
    res = RT.retrain_local(str(path))
    assert "Spark shell" in res.stage_skipped
    assert RT.plan(str(path))[0] == []  # not "behind" at every retrain


def test_code_that_cannot_be_hashed_judges_models_by_release_alone(monkeypatch):
    """A zipped package (--py-files) reads no file to hash: it hashed nothing but names, another
    hash than the installed CLI's of the same code, and each refit what the other fitted."""
    from sparkpredict import __version__, fitcache

    monkeypatch.setattr(fitcache, "_FIT_CODE_HASH", [])
    monkeypatch.setattr(fitcache, "fit_code_files", lambda: [Path("/nowhere/pkg.zip/sparkpredict/fitting.py")])
    monkeypatch.setattr(fitcache, "_STAMPS", {})
    assert R.fitted_by() == f"{__version__}+fit.unknown"
    assert R.fitted_here(f"{__version__}+fit.3f2a9c1b7e40")
    assert not R.fitted_here("0.1.0") and not R.fitted_here("0.1.0+fit.3f2a9c1b7e40")
    monkeypatch.setattr(fitcache, "_FIT_CODE_HASH", ["3f2a9c1b7e40"])
    assert R.fitted_here(f"{__version__}+fit.unknown") and R.fitted_here(f"{__version__}+fit.3f2a9c1b7e40")
    assert not R.fitted_here(f"{__version__}+fit.000000000000") and not R.fitted_here(None)


def test_a_replaced_log_opens_no_other_ingested_run(tmp_path, monkeypatch):
    """An upgrade re-reads every log ingested before it. Whether a stored copy may be replaced
    read the runs file of every batch (2.5 s a log on a store of 3,040 ingested logs); an
    ingest batch holds the one run its label names, so only the run's own batches, edits and
    compacted batches can say it was edited. An edit is still found."""
    from sparkpredict.capture.eventlog_ingest import (
        _replaceable,
        _StoredRun,
        ingest_event_logs,
    )
    from sparkpredict.store.edit import edit_runs
    from sparkpredict.store.io import Store

    logs = [HERE / "data" / "eventlogs" / n for n in
            ("aqe_executors_killed_spark4.zstd", "task_cpus_not_dividing_cores_spark4.zstd",
             "barrier_stage_retried_spark4.zstd")]
    path = tmp_path / "store"
    ids = [f.run_id for f in ingest_event_logs(logs, path).files]
    st = store.open(path)
    opened: list[str] = []
    real = Store._read_file

    def spy(self, file, *args, **kwargs):
        opened.append(file)
        return real(self, file, *args, **kwargs)

    monkeypatch.setattr(Store, "_read_file", spy)
    stored = _StoredRun("succeeded", 1, "eventlog", writer="0.2.0")
    batch, why = _replaceable(st, ids[0], stored)
    assert batch is not None and why == ""
    assert len(opened) == 1 and batch in opened[0], opened
    monkeypatch.undo()
    edit_runs(str(path), [ids[0]], job="renamed")
    assert _replaceable(store.open(path), ids[0], stored) == (
        None, "it was edited with `sparkpredict store edit`, whose edits keep it")


def _as_if_ingested_before_scans(path: Path, version: str = "0.3.0") -> None:
    """Rewrite the store as an ingest before stage_scans wrote it: its runs rows name that
    release, and no batch has a stage_scans file."""
    for f in (path / "runs").glob("part-*.parquet"):
        table = pq.read_table(f)
        i = table.schema.get_field_index("sparkpredict_version")
        table = table.set_column(i, table.schema.field(i), [[version] * table.num_rows])
        pq.write_table(table.replace_schema_metadata(table.schema.metadata), f)
    for f in (path / "stage_scans").glob("part-*.parquet"):
        f.unlink()


def _sums(path: Path) -> dict:
    st = store.open(path)
    stages, tasks, runs = st.read("stages"), st.read("tasks"), st.runs()
    return {"runs": len(runs), "stages": len(stages), "tasks": len(tasks),
            "stage_tasks": int(stages["num_tasks"].sum()), "run_tasks": int(runs["num_tasks"].sum()),
            "input_bytes": int(runs["input_bytes"].sum())}


def test_a_log_ingested_before_stage_scans_is_read_again_for_its_files(tmp_path, capsys, monkeypatch):
    """stage_scans came in 0.4.0, and a log a 0.3.0 ingest stored was 'unchanged' for ever: an
    upgraded store never got the files its history's scans read, unless deleted. The next ingest
    reads such a log again and replaces its copy, one copy of every row; the report says so."""
    from sparkpredict.capture.eventlog_ingest import _StoredRun, ingest_event_logs
    from sparkpredict.store import schema as S

    log = HERE / "data" / "eventlogs" / "aqe_executors_killed_spark4.zstd"
    path = tmp_path / "store"
    ingest_event_logs([log], path)
    scans = store.open(path).read("stage_scans")
    assert list(scans["scan_files"]) == [8, 8]  # the SQL file scan, in both its stages
    want = _sums(path)
    _as_if_ingested_before_scans(path)
    assert store.open(path).read("stage_scans").empty

    assert main(["ingest", str(log), "--store", str(path)]) == 0
    out = capsys.readouterr().out
    assert "replacing its stored copy (succeeded, 36 tasks, stored by sparkpredict 0.3.0 without its " \
           "scans' files)" in out, out
    assert ("1 log: 1 ingested (1 replacing stored copy: 1 stored before sparkpredict 0.4.0 recorded "
            "its scans' files), 0 unchanged") in out, out
    assert store.open(path).read("stage_scans").sort_values("stage_id").reset_index(drop=True).equals(
        scans.sort_values("stage_id").reset_index(drop=True))
    assert _sums(path) == want  # one copy of every row
    assert store.open(path).runs()["sparkpredict_version"].iloc[0] == __import__("sparkpredict").__version__
    again = ingest_event_logs([log], path)
    assert (again.files[0].outcome, again.runs_replaced) == ("unchanged", 0)
    # a copy of the log elsewhere (found by its app id, not its path) replaces it as well
    _as_if_ingested_before_scans(path)
    moved = tmp_path / "elsewhere" / log.name
    moved.parent.mkdir()
    shutil.copy(log, moved)
    f = ingest_event_logs([moved], path).files[0]
    assert (f.outcome, f.replaced_why) == ("ingested", "scans") and _sums(path) == want
    assert len(store.open(path).read("stage_scans")) == 2

    # merged by a compaction with another run, the copy cannot be replaced: skipped unread and
    # quietly (its one fix is a fresh store, and a scheduled ingest would warn of it every run)
    ingest_event_logs([HERE / "data" / "eventlogs" / "nds_q72_dataproc_2_2.zstd"], path, compact=False)
    _as_if_ingested_before_scans(path)
    from sparkpredict.store.compact import compact

    compact(str(path), keep_s=0)
    from sparkpredict.capture import eventlog_ingest

    parsed: list = []
    asked: list = []
    real, replaceable = eventlog_ingest._parse_source, eventlog_ingest._replaceable
    monkeypatch.setattr(eventlog_ingest, "_parse_source", lambda src: parsed.append(src) or real(src))
    monkeypatch.setattr(eventlog_ingest, "_replaceable", lambda *a: asked.append(a) or replaceable(*a))
    report = ingest_event_logs([moved], path)  # found by its path: neither read nor looked for
    assert [(f.outcome, f.warnings) for f in report.files] == [("unchanged", [])]
    assert (parsed, asked) == ([], [])
    # a log whose name does not say its run is read to learn it (as any log so named)
    report = ingest_event_logs([log], path)
    assert [(f.outcome, f.warnings) for f in report.files] == [("exists", [])]
    assert store.open(path).read("stage_scans").empty

    # only ingest's copies are read again; the advice's warning of mixed input rules keeps 0.3.0
    assert S.SCANS_RECORDED_SINCE == (0, 4, 0) and S.INPUT_MEASURED_SINCE == (0, 3, 0)
    since = [_StoredRun("succeeded", 1, "eventlog", writer=w).scans_before()
             for w in (None, "0.2.0", "0.3.0", "0.3.9", "0.4.0", "0.4.0+fit.abc", "dev")]
    assert since == [True, True, True, True, False, False, False]
    assert not _StoredRun("succeeded", 1, "listener", writer="0.3.0").scans_before()
    assert not S.measured_before("0.3.0") and S.scans_before("0.3.0")


@pytest.mark.parametrize("version", ["0.3.0", "0.2.0"])  # read again for its scans' files; its input
def test_a_log_read_again_after_an_upgrade_keeps_its_runs_job_whatever_the_job_given(tmp_path, capsys, version):
    """From a review of the upgrade to 0.4.0: a scheduled `ingest /history --job beta` over logs an
    older release stored under --job alpha skipped them, each run keeping alpha with a warning;
    the first such ingest after the upgrade read them again and moved every one to beta, saying
    nothing. A run already in the store keeps its job when its log is read again."""
    logs = [HERE / "data" / "eventlogs" / n for n in ("aqe_executors_killed_spark4.zstd", "nds_q72_dataproc_2_2.zstd")]
    path = tmp_path / "store"
    assert main(["ingest", *map(str, logs), "--store", str(path), "--job", "alpha"]) == 0
    want = _sums(path)
    _as_if_ingested_before_scans(path, version)
    capsys.readouterr()

    assert main(["ingest", *map(str, logs), "--store", str(path), "--job", "beta", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["runs_replaced"] == 2
    runs = store.open(path).runs()
    assert sorted(runs["job"]) == ["alpha", "alpha"]
    for f in report["files"]:
        assert f["replaced_why"] == ("scans" if version == "0.3.0" else "measured")
        assert any("keeps its stored job 'alpha', not --job 'beta'" in w
                   and f"sparkpredict store edit {f['run_id']} --job beta" in w for w in f["warnings"]), f
    assert _sums(path) == want  # one copy of every row
    assert len(store.open(path).read("stage_scans")) == 2 + 13  # both runs' scans, once

    # the job they were asked for, given again: silent, and they stay
    assert main(["ingest", *map(str, logs), "--store", str(path), "--job", "alpha"]) == 0
    assert "warning" not in capsys.readouterr().out
    assert sorted(store.open(path).runs()["job"]) == ["alpha", "alpha"]


def test_a_damaged_log_of_a_run_stored_whole_before_stage_scans_is_skipped_as_before(tmp_path, capsys):
    """From a review of the upgrade to 0.4.0: a log of a run stored whole by 0.3.0 that had been
    damaged since (a line garbled, or undecodable) was skipped as already in the store, exit 0;
    0.4.0 read it again for its scans' files and failed it, exit 1, at every scheduled ingest
    for ever, as its copy stays unreplaced. The run is stored whole: such a log is skipped as
    before. A log of a run whose input was measured under older rules still fails: its copy
    needs it."""
    plain = HERE / "data" / "eventlogs" / "spark4" / "local-1795969313432"
    path = tmp_path / "store"
    assert main(["ingest", str(plain), "--store", str(path)]) == 0
    want = _sums(path)
    garbled, undecodable = tmp_path / "garbled" / plain.name, tmp_path / "undecodable" / f"{plain.name}.zstd"
    for f in (garbled, undecodable):
        f.parent.mkdir()
    lines = plain.read_text().splitlines(keepends=True)
    garbled.write_text("".join(lines[:20] + ["{not json\n"] + lines[20:]))
    undecodable.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 64)

    for version, rc in (("0.3.0", 0), ("0.2.0", 1)):
        _as_if_ingested_before_scans(path, version)
        capsys.readouterr()
        assert main(["ingest", str(garbled), str(undecodable), "--store", str(path), "--json"]) == rc, version
        report = json.loads(capsys.readouterr().out)
        outcomes = [(f["outcome"], f["warnings"]) for f in report["files"]]
        if rc == 0:
            assert outcomes == [("exists", []), ("exists", [])], outcomes
        else:
            assert [o for o, _ in outcomes] == ["failed", "failed"], outcomes
        assert _sums(path) == want
    # an intact copy still replaces it, its scans' files read
    _as_if_ingested_before_scans(path, "0.3.0")
    assert main(["ingest", str(plain), "--store", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["files"][0]["replaced_why"] == "scans"
    assert _sums(path) == want


def test_a_log_ingested_when_schema_probes_counted_is_read_again_for_its_input(tmp_path, capsys):
    """0.5.0 leaves a DataFrameReader's schema probes out of a run's input (a CSV's header line
    and inferSchema pass counted 2.5 times the file). A log an older ingest stored kept the old
    count for ever, mixed in one job's history with the new: the next ingest reads it again and
    replaces its copy, as for the scans' files; a copy whose size was declared, or the
    listener's, is not read again (nothing to mend, or no log)."""
    from sparkpredict.capture.eventlog_ingest import _StoredRun, ingest_event_logs
    from sparkpredict.store import schema as S

    log = HERE / "data" / "eventlogs" / "csv_header_probes_spark4.zstd"
    path = tmp_path / "store"
    ingest_event_logs([log], path)
    assert int(store.open(path).runs()["input_bytes"].iloc[0]) == 371_312  # the file, once
    want = _sums(path)
    _as_if_ingested_before_scans(path, "0.4.0")
    for f in (path / "runs").glob("part-*.parquet"):  # as 0.4.0 measured it: the probes too
        table = pq.read_table(f)
        i = table.schema.get_field_index("input_bytes")
        table = table.set_column(i, table.schema.field(i), [[928_280] * table.num_rows])
        pq.write_table(table.replace_schema_metadata(table.schema.metadata), f)
    capsys.readouterr()

    assert main(["ingest", str(log), "--store", str(path)]) == 0
    out = capsys.readouterr().out
    assert ("replacing its stored copy (succeeded, 5 tasks, stored by sparkpredict 0.4.0, before a reader's "
            "schema probes were left out of input)") in out, out
    assert ("1 log: 1 ingested (1 replacing stored copy: 1 stored before sparkpredict 0.5.0 left a "
            "reader's schema probes out of its input), 0 unchanged") in out, out
    assert _sums(path) == want  # one copy of every row, the input the file's
    again = ingest_event_logs([log], path)
    assert (again.files[0].outcome, again.runs_replaced) == ("unchanged", 0)

    assert S.PROBES_LEFT_OUT_SINCE == (0, 5, 0) and S.INPUT_MEASURED_SINCE == (0, 3, 0)
    since = [_StoredRun("succeeded", 1, "eventlog", writer=w).probes_before()
             for w in (None, "0.3.0", "0.4.0", "0.4.9+fit.abc", "0.5.0", "0.5.0+fit.abc", "dev")]
    assert since == [True, True, True, True, False, False, False]
    assert not _StoredRun("succeeded", 1, "listener", writer="0.4.0").read_again()
    assert not _StoredRun("succeeded", 1, "eventlog", writer="0.4.0", declared=True).read_again()
