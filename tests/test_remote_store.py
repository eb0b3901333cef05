"""A history store on S3 (``s3://bucket/path?endpoint_override=...``), read and written through
pyarrow's S3 file system, against moto's S3 server running in this process: the one fake in
these tests, as no real S3 can be reached from CI. The listener's writes and the Spark retrain
reach S3 through Hadoop's s3a (hadoop-aws, which pyspark does not ship), so they are not here;
everything the Python side does with a store is.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from sparkpredict import store, suggest_executors
from sparkpredict.cli import main
from sparkpredict.errors import StoreError
from sparkpredict.features.runs import runs_table

HERE = Path(__file__).parent
HISTORY = HERE / "data" / "history"
LOGS = HERE / "data" / "eventlogs" / "spark4"


@pytest.fixture(scope="module")
def s3():
    """uri(name) -> the URI of a store ``name`` in a bucket of a fresh S3 server."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = pytest.MonkeyPatch()
    # what pyarrow reads for S3 credentials; no instance metadata lookup (it waits on a timeout)
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}.items():
        env.setenv(k, v)
    query = f"endpoint_override={host}:{port}&scheme=http&region=us-east-1"
    pafs.S3FileSystem(endpoint_override=f"{host}:{port}", scheme="http", region="us-east-1",
                      allow_bucket_creation=True).create_dir("hist")
    try:
        yield lambda name, user="": f"s3://{user}hist/{name}?{query}"
    finally:
        env.undo()
        server.stop()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKPREDICT_CACHE", str(tmp_path / "cache"))


def _copy_history(uri: str) -> None:
    fs, root = pafs.FileSystem.from_uri(uri)
    pafs.copy_files(str(HISTORY), root, destination_filesystem=fs)


def _tasks_per_run(path: str) -> dict[str, int]:
    return store.open(path).read("tasks", columns=["run_id"])["run_id"].value_counts().to_dict()


def test_ingest_into_s3_stores_what_a_local_ingest_stores_and_again_nothing(s3, tmp_path, capsys, cache):
    remote, local = s3("ingested"), str(tmp_path / "local")
    assert main(["ingest", str(LOGS), "--store", remote, "--job", "demo"]) == 0
    assert main(["ingest", str(LOGS), "--store", local, "--job", "demo"]) == 0
    capsys.readouterr()
    runs = store.open(remote).read("runs").sort_values("run_id").reset_index(drop=True)
    assert len(runs) == 6 and set(runs["job"]) == {"demo"}
    mine = store.open(local).read("runs").sort_values("run_id").reset_index(drop=True)
    assert list(runs["run_id"]) == list(mine["run_id"])
    assert list(runs["wall_ms"]) == list(mine["wall_ms"])
    assert _tasks_per_run(remote) == _tasks_per_run(local)
    assert sum(_tasks_per_run(remote).values()) == 5 * 21 + 5005  # as each log's TaskEnds

    assert main(["ingest", str(LOGS), "--store", remote, "--job", "demo"]) == 0
    assert "0 ingested, 6 unchanged" in capsys.readouterr().out
    assert len(store.open(remote).read("runs")) == 6


def test_a_history_on_s3_gives_the_advice_it_gives_locally_and_retrains_there(s3, tmp_path, capsys, cache):
    remote = s3("history")
    _copy_history(remote)
    local = tmp_path / "history"
    shutil.copytree(HISTORY, local)
    there = suggest_executors("sort", "64MB", deadline_s=30, store=remote)
    here = suggest_executors("sort", "64MB", deadline_s=30, store=local)
    assert there.executors == here.executors
    assert there.predicted_runtime_s == pytest.approx(here.predicted_runtime_s, rel=1e-9)
    assert there.model_name == here.model_name

    assert main(["retrain", "--store", remote, "--local"]) == 0
    assert "refit 3 of 3 job(s)" in capsys.readouterr().out
    fs, root = pafs.FileSystem.from_uri(remote)
    written = [i.path for i in fs.get_file_info(pafs.FileSelector(root, recursive=True))]
    assert any("/_models/registry/part-" in p for p in written), written
    assert main(["retrain", "--store", remote, "--local"]) == 0
    assert "refit 0 of 3" in capsys.readouterr().out  # its registry read back: nothing changed


def test_edit_and_clean_on_s3_and_a_half_written_batch_is_never_read(s3, capsys, cache):
    remote = s3("edited")
    _copy_history(remote)
    run = "local-1795975705584"  # a wordcount run
    tasks_before = _tasks_per_run(remote)
    assert main(["store", "edit", run, "--exclude", "--store", remote]) == 0
    assert run not in set(runs_table(remote)["run_id"]) and len(runs_table(remote)) == 71

    # a writer that died after its task rows, before its runs file (the commit mark)
    fs, root = pafs.FileSystem.from_uri(remote)
    orphan = f"{root}/tasks/part-1700000000000-died-000000000000.parquet"
    table = store.open(remote).read("tasks", form="arrow").slice(0, 50)
    with fs.open_output_stream(orphan) as out:
        pq.write_table(pa.Table.from_batches(table.to_batches(), table.schema), out)
    assert _tasks_per_run(remote) == tasks_before
    capsys.readouterr()
    assert main(["store", "clean", "--older-than", "0", "--store", remote]) == 0
    assert "removed 1 uncommitted file(s)" in capsys.readouterr().out
    assert fs.get_file_info(orphan).type == pafs.FileType.NotFound
    assert _tasks_per_run(remote) == tasks_before


def test_credentials_in_the_uri_are_warned_of_and_kept_out_of_the_report(s3, tmp_path, capsys, caplog, cache):
    secret = "SECRETxyz123"
    remote = s3("reported", user=f"testing:{secret}@")
    _copy_history(remote)
    out = tmp_path / "r.html"
    assert main(["report", "--store", remote, "--job", "sort", "--out", str(out)]) == 0
    html = out.read_text()
    assert secret not in html and "s3://testing:***@hist/reported?" in html
    assert "holds credentials" in caplog.text and secret not in caplog.text
    # a registry behind the runs: the advice's note names `retrain --store URI`, which the page
    # showed with the secret
    assert main(["retrain", "--store", remote, "--job", "sort", "--no-stage-models"]) == 0
    first = store.open(remote).runs().query("job == 'sort'")["run_id"].iloc[0]
    assert main(["store", "edit", first, "--exclude", "--store", remote]) == 0
    capsys.readouterr()
    assert main(["report", "--store", remote, "--job", "sort", "--out", str(out)]) == 0
    html = out.read_text()
    assert "predates its latest runs" in html and "retrain --store s3://testing:***@hist" in html
    assert secret not in html
    assert main(["suggest", "--store", remote, "--job", "sort", "--input-size", "64MB"]) == 0
    said = capsys.readouterr()
    assert "retrain --store s3://testing:***@hist" in said.out + said.err and secret not in said.out + said.err


def test_an_unreachable_or_missing_remote_store_is_one_error_naming_the_fix(s3, capsys):
    dead = "s3://hist/h?endpoint_override=127.0.0.1:1&scheme=http&region=us-east-1"
    assert main(["store", "summary", "--store", dead]) == 2
    err = capsys.readouterr().err
    assert "error: cannot reach store" in err and "fix: check the URI's bucket and endpoint" in err
    assert "Traceback" not in err
    with pytest.raises(StoreError, match="cannot reach store"):
        suggest_executors("sort", "64MB", store=dead)

    no_bucket = s3("x").replace("s3://hist/", "s3://nobucket/")
    assert main(["ingest", str(LOGS), "--store", no_bucket]) == 2
    err = capsys.readouterr().err
    assert "error: cannot write to store" in err and "fix: create the bucket first" in err


def test_a_remote_store_that_stops_answering_mid_command_is_the_same_error(s3, tmp_path, capsys, monkeypatch,
                                                                            cache):
    """Opened, then the connection drops while reading: pyarrow's error has no path or errno,
    which the CLI otherwise leaves a traceback (a bug); on a remote store it is the network."""
    remote = s3("dropped")
    _copy_history(remote)

    def dropped(self, *a, **k):
        raise OSError("When reading information for key 'runs/part-x.parquet' in bucket 'hist': "
                      "AWS Error NETWORK_CONNECTION during GetObject operation")

    monkeypatch.setattr(store.Store, "read", dropped)
    assert main(["store", "summary", "--store", remote]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot reach store 's3://hist/dropped?") and "NETWORK_CONNECTION" in err
    assert "fix: check the URI's bucket and endpoint" in err
    shutil.copytree(HISTORY, tmp_path / "local")
    with pytest.raises(OSError, match="NETWORK_CONNECTION"):  # a local store's such error stays a bug
        main(["store", "summary", "--store", str(tmp_path / "local")])


@pytest.mark.spark
def test_retrain_on_spark_without_a_file_system_for_s3_is_an_error_or_the_local_path(s3, capsys, cache):
    """pip's pyspark has no Hadoop FileSystem for s3:// (no hadoop-aws): --spark names the fix;
    a retrain whose path the number of jobs chose (crossover 0: Spark) fits locally and says so.
    Subprocesses: the test process's JVM must start with the listener jar (conftest)."""
    import json
    import os
    import subprocess
    import sys

    remote = s3("spark")
    _copy_history(remote)

    def cli(*args: str, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "sparkpredict", "retrain", "--store", remote, *args],
                              capture_output=True, text=True, timeout=300, check=False, env={**os.environ, **env})

    r = cli("--spark")
    assert r.returncode == 2, r.stdout + r.stderr
    assert ("error: Spark cannot read store 's3://hist/spark?" in r.stderr
            and "its Hadoop has no FileSystem for scheme 's3'" in r.stderr), r.stderr
    assert "fix: retrain on this machine with --local" in r.stderr and "Traceback" not in r.stderr
    assert store.open(remote).fs.get_file_info(
        f"{store.open(remote).root}/_models").type == pafs.FileType.NotFound  # nothing written

    r = cli("--json", SPARKPREDICT_RETRAIN_CROSSOVER="0")
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["path"] == "local" and sorted(out["refit"]) == ["sort", "sqljoin", "wordcount"]
    assert out["path_note"].startswith("Spark cannot read store") and "local path ran instead" in out["path_note"]


def test_compaction_on_s3_keeps_every_row_and_advice(s3, capsys, cache):
    remote = s3("compacted")
    _copy_history(remote)
    st = store.open(remote)
    src = st.read("runs")
    for i in range(10):  # small batches beside the history's one: read on the thread pool
        st.append({"runs": src.head(1).assign(run_id=f"extra-{i}", app_id=f"extra-{i}"),
                   "tasks": st.read("tasks").head(3).assign(run_id=f"extra-{i}")})
    before = {t: st.read(t).sort_values(["run_id"], kind="stable").reset_index(drop=True)
              for t in ("runs", "tasks")}
    advice = suggest_executors("wordcount", "64MB", store=remote)

    def same_rows():
        for t, df in before.items():
            got = st.read(t).sort_values(["run_id"], kind="stable").reset_index(drop=True)
            assert got.sort_values(list(got.columns)).reset_index(drop=True).equals(
                df.sort_values(list(df.columns)).reset_index(drop=True))

    # the replaced batches stay 10 minutes on S3 too, hidden by the compacted batch's commit
    assert main(["store", "compact", "--store", remote]) == 0
    assert "merged 11 batches" in capsys.readouterr().out
    assert len(st.committed_batches()) == 12 and len(st.visible_marks()) == 1
    same_rows()
    assert main(["store", "compact", "--keep", "0", "--store", remote]) == 0
    assert "removed 24 files of batches replaced" in capsys.readouterr().out  # 10 x 2 + the history's 4
    assert len(st.committed_batches()) == 1
    same_rows()
    again = suggest_executors("wordcount", "64MB", store=remote)
    assert (again.executors, again.predicted_runtime_s) == (advice.executors, advice.predicted_runtime_s)
