"""Damaged store-side files that reached the user as a traceback, found by a probe that damaged
each file a real store and registry hold (the marker; every table's Parquet files: cut short,
emptied, not Parquet, a column missing, null or of another type, another table's file planted;
the registry snapshot and its artifacts the same ways) and ran what users run on each (``store.open
(path).runs()``, ``suggest_executors``, ``load_models``, and ``suggest``, ``runs``, ``store
summary``, ``retrain``, ``store compact`` through ``cli.main``). Most damage was refused already
with an ``error:`` and a ``fix:``; these are the cases that were not: a registry snapshot whose
footer or columns were damaged (a bare ValueError, AttributeError or KeyError from
``load_models`` and ``retrain``), a runs row without a status (``store summary``'s TypeError) and
runs recorded with 0 executor cores (``suggest``'s ZeroDivisionError). The store is built once
from real writers (``Store.append``, a local ``retrain``) and copied per case; no JVM, no timings.
"""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_advise_history import history, make_store

from sparkpredict import registry as R
from sparkpredict import suggest_executors
from sparkpredict.cli import main
from sparkpredict.errors import ModelError, StoreError


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> Path:
    """A store of two jobs' runs (etl: 32 runs, other: 8) and a registry of their models."""
    path = tmp_path_factory.mktemp("damaged") / "clean"
    make_store(path, history(sizes=(10, 20, 40, 80)), history(job="other", sizes=(1, 2), execs=(1, 2)))
    assert main(["retrain", "--store", str(path), "--local", "--no-stage-models"]) == 0
    return path


@pytest.fixture
def copy(clean, tmp_path) -> Path:
    dest = tmp_path / "store"
    shutil.copytree(clean, dest)
    return dest


def _sums(path: Path) -> dict[str, str]:
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file()}


def _snapshot(store: Path) -> Path:
    [snap] = sorted((store / "_models" / "registry").glob("part-*.parquet"))
    return snap


def _rewrite(path: Path, fn) -> None:
    table = pq.read_table(path)
    pq.write_table(fn(table), path)


def _refused(capsys, argv: list[str], store: Path) -> str:
    """Run ``argv``; it must exit 2 with an error and a fix, and leave every file of ``store`` as
    it was. Returns what it wrote to stderr."""
    before = _sums(store)
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "fix:" in err and "Traceback" not in err
    assert _sums(store) == before
    return err


def _set(col: str, values) -> object:
    def fn(t: pa.Table) -> pa.Table:
        return t.set_column(t.column_names.index(col), col, values(t)).replace_schema_metadata(t.schema.metadata)
    return fn


def _drop(col: str) -> object:
    return lambda t: t.drop_columns([col]).replace_schema_metadata(t.schema.metadata)


SNAPSHOT_DAMAGE = {
    # the footer's version is no number (ValueError: invalid literal for int())
    "version-not-a-number": (lambda t: t.replace_schema_metadata({**t.schema.metadata, b"registry_version": b"x"}),
                             "its registry_version b'x' is not a number"),
    # a column every reader takes from each row (AttributeError: 'Pandas' object has no attribute)
    "no-job": (_drop("job"), "it has no column(s) job"),
    "no-model_kind": (_drop("model_kind"), "it has no column(s) model_kind"),
    "no-artifact": (_drop("artifact"), "it has no column(s) artifact"),
    "no-version": (_drop("version"), "it has no column(s) version"),  # retrain's KeyError
    # rows without their key or version (retrain's int(NaN): ValueError)
    "null-version": (_set("version", lambda t: pa.nulls(t.num_rows, pa.int64())), "without a value in version"),
    "null-job": (_set("job", lambda t: pa.nulls(t.num_rows, pa.string())), "without a value in job"),
    # a column of another type, not castable (written by another tool)
    "artifact_version-text": (_set("artifact_version", lambda t: pa.array(["one"] * t.num_rows)),
                              "a column is not of the type sparkpredict writes"),
}


@pytest.mark.parametrize("case", sorted(SNAPSHOT_DAMAGE))
def test_a_damaged_registry_snapshot_is_refused_naming_the_file_and_the_fallback(copy, capsys, case):
    damage, said = SNAPSHOT_DAMAGE[case]
    snap = _snapshot(copy)
    _rewrite(snap, damage)
    with pytest.raises(StoreError, match="is damaged") as err:
        R.load_models(str(copy))
    assert said in err.value.message and snap.name in err.value.message
    assert err.value.fix == "delete that file to fall back to the previous snapshot, then retrain"
    out = _refused(capsys, ["retrain", "--store", str(copy), "--local", "--no-stage-models"], copy)
    assert snap.name in out and said in out


def test_a_snapshot_read_for_one_column_is_checked_for_that_column_only(copy):
    """`store clean` reads the snapshots' artifact column alone: a damage in another column is no
    reason to refuse it, and the column comes back as the schema types it."""
    snap = _snapshot(copy)
    _rewrite(snap, _drop("trained_on"))
    st = R._open(str(copy))
    got = R._read_snapshot(st, snap.name, ["artifact"])
    assert got.column_names == ["artifact"] and got.schema.field("artifact").type == pa.string()
    assert got.schema.metadata[b"registry_version"] == b"1"   # the footer kept: failed fits live there
    with pytest.raises(StoreError, match="it has no column"):
        R._read_snapshot(st, snap.name)


def test_a_registry_row_without_an_artifact_version_is_an_older_model_to_refit(copy):
    """A null artifact version (a snapshot edited by hand) raised int(NaN)'s ValueError from
    load_models; it is a model of no version this sparkpredict reads, which retrain refits."""
    _rewrite(_snapshot(copy), _set("artifact_version", lambda t: pa.nulls(t.num_rows, pa.int32())))
    with pytest.raises(ModelError, match="has artifact version None") as err:
        R.load_models(str(copy))
    assert f"sparkpredict retrain --store {copy}" in err.value.fix
    assert main(["retrain", "--store", str(copy), "--local", "--no-stage-models"]) == 0
    assert sorted(R.load_models(str(copy))) == ["etl", "other"]


def _first_runs_file(store: Path) -> Path:
    """The runs file of the first batch written: etl's 32 runs."""
    return min((store / "runs").glob("part-*.parquet"))


@pytest.mark.parametrize("how", ["null", "missing"])
def test_store_summary_lists_runs_without_a_status_as_unknown(copy, capsys, how):
    """A runs file whose status is null or missing (another tool's, or edited) made `store
    summary`'s listing raise TypeError (None in a format of width 10); --json counts such runs as
    "unknown", and so does the table now."""
    damage = _drop("status") if how == "missing" else _set("status", lambda t: pa.nulls(t.num_rows, pa.string()))
    _rewrite(_first_runs_file(copy), damage)
    capsys.readouterr()
    assert main(["store", "summary", "--store", str(copy), "--last", "40"]) == 0
    out = capsys.readouterr().out
    etl_rows = [line.split() for line in out.splitlines() if line.startswith("app-etl-")]
    other_rows = [line.split() for line in out.splitlines() if line.startswith("app-other-")]
    assert len(etl_rows) == 32 and {r[2] for r in etl_rows} == {"unknown"}
    assert len(other_rows) == 8 and {r[2] for r in other_rows} == {"succeeded"}


def test_runs_recorded_with_zero_cores_advise_with_the_models_cores(copy):
    """Runs whose executor_cores is 0 (a damaged or hand-written runs file) gave the advice 0 cores
    to ask for, and its unvaried-resource warning divided by it (ZeroDivisionError). A 0 is no
    size: the advice takes the model's own (every run trained on had 4)."""
    _rewrite(_first_runs_file(copy), _set("executor_cores", lambda t: pa.array([0] * t.num_rows, pa.int32())))
    a = suggest_executors("etl", "30GB", store=str(copy))
    assert a.executor_cores == 4
    assert not any("per executor and this asks for" in w for w in a.warnings)


def test_a_recorded_zero_memory_is_skipped_for_the_latest_positive_one(copy):
    """Of the runs' memory, the latest positive value is asked for: a later run of 0 MiB is skipped,
    not a reason to drop to the model's default."""
    _rewrite(_first_runs_file(copy), _set("executor_memory_mb", lambda t: pa.array(
        [0 if i == t.num_rows - 1 else 2048 for i in range(t.num_rows)], pa.int64())))
    a = suggest_executors("etl", "30GB", store=str(copy))
    assert a.executor_memory_mb == 2048


@pytest.mark.parametrize("uri", ["s3://", "gs://"])
def test_a_store_uri_of_no_bucket_is_refused_before_it_is_read(uri, capsys):
    """pyarrow makes a file system of s3:// alone; its first look at the store's marker then
    raised a bare ArrowInvalid ("Path cannot start with a separator")."""
    from sparkpredict import store

    with pytest.raises(StoreError, match="names no bucket or folder") as err:
        store.open(uri)
    assert err.value.fix == f"give the bucket and the store's folder in it: {uri}BUCKET/FOLDER"
    assert main(["store", "summary", "--store", uri]) == 2
    assert "error: the store" in capsys.readouterr().err


def test_a_nul_in_the_store_setting_of_spark_defaults_names_the_file(tmp_path, monkeypatch, capsys):
    """A damaged spark-defaults.conf whose store value holds a NUL byte raised pyarrow's
    "Embedded NUL char in path" as a traceback from every command given no --store."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_bytes(b"spark.sparkpredict.store /tmp/st\x00re\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf))
    monkeypatch.delenv("SPARKPREDICT_STORE", raising=False)
    assert main(["suggest", "--job", "etl", "--input-size", "30GB"]) == 2
    err = capsys.readouterr().err
    assert "holds a NUL character" in err and f"in {conf / 'spark-defaults.conf'}" in err
    assert "fix: give the store's folder without it" in err


def test_a_run_recorded_with_more_executors_than_any_cluster_is_no_count_the_advice_saw(copy):
    """A runs row of 10^9 executors (a typo, a damaged row) is dropped by the fit, but the advice
    still counted it among the executors its runs used: the candidates' default ceiling (twice
    the largest count seen, capped at 1000) went from 16 to 1000, and the knee from "not
    reached up to 16" to 34. The counts seen are now those a fit keeps: 1 to 8."""
    _rewrite(_first_runs_file(copy), _set("executors_requested", lambda t: pa.array(
        [10**9 if i == 0 else v for i, v in enumerate(t.column("executors_requested").to_pylist())],
        t.schema.field("executors_requested").type)))
    a = suggest_executors("etl", "30GB", store=str(copy), objective="knee")
    assert [c.executors for c in a.candidates] == list(range(1, 17))


@pytest.mark.parametrize("table", ["runs", "stages"])
def test_a_file_where_a_tables_folder_belongs_is_named_by_the_python_api(copy, capsys, table):
    """A file saved over ``STORE/runs`` (or ``stages``): reading raised pyarrow's bare
    NotADirectoryError out of ``store.open(p).runs()``; it is now the StoreError the CLI gives."""
    from sparkpredict import store as store_mod

    shutil.rmtree(copy / table)
    (copy / table).write_text("runs.csv was saved here\n")
    with pytest.raises(StoreError) as got:
        getattr(store_mod.open(str(copy)), table)()
    assert got.value.message == (f"{str(copy / table)!r} of store {str(copy)!r} is a file, where the store "
                                 "keeps a folder of Parquet files")
    assert got.value.fix.startswith("move that file out of the store")
    if table == "runs":  # the summary reads no stages
        err = _refused(capsys, ["store", "summary", "--store", str(copy)], copy)
        assert "is a file, where the store keeps a folder" in err


def test_an_append_into_a_store_whose_table_folder_is_a_file_names_it_and_writes_nothing(copy):
    """Writing a batch whose stages folder is a file failed, as it must, but its fix read
    "choose a writable folder, or fix its permissions", which nothing was wrong with."""
    from sparkpredict import store as store_mod

    shutil.rmtree(copy / "stages")
    (copy / "stages").write_text("x\n")
    before = _sums(copy)
    runs, stages = history(job="new", sizes=(1,), execs=(1,))
    with pytest.raises(StoreError) as got:
        store_mod.open(str(copy)).append({"runs": runs, "stages": stages})
    assert "stages" in got.value.message and got.value.fix.startswith("a file stands where the store keeps a folder")
    assert _sums(copy) == before
